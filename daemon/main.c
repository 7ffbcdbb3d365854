/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>

#include "bus.h"
#include "config-build.h"
#include "engine.h"
#include "exit-code.h"
#include "log.h"
#include "util.h"
#include "verbs.h"

static EngineOptions arg_engine = {};
static const char *arg_json = NULL;
static const char *arg_action = NULL;
static bool arg_all = false;
static char *arg_config_file_buf = NULL, *arg_dropin_dir_buf = NULL;

static void help(void) {
        printf("%s [OPTIONS...] [VERB [ARGS...]]\n\n"
               "Decide and apply stable writes per block device.\n\n"
               "Verbs:\n"
               "  (none)               Run the daemon in the foreground\n"
               "  apply DEVICE...      Apply the decision for these disks once and exit\n"
               "                       (what the udev rule runs)\n"
               "  restore --all|DEVICE...  Put back the flags stablepages changed to what the\n"
               "                       kernel set, never turning a disk that needs stable writes\n"
               "                       off (what removing the package runs)\n"
               "  dump                 Print every disk with need, reasons, kernel state and\n"
               "                       desired state, read-only, without the daemon\n"
               "  udev-facts DEVICE    Print what only root can read of DEVICE (a dm device's\n"
               "                       table, the disk under a loop device's backing file)\n"
               "                       as udev properties (the udev rule's import)\n\n"
               "Options:\n"
               "  -h --help            Show this help\n"
               "     --version         Show package version\n"
               "     --json[=pretty|short]  dump as JSON\n"
               "     --action=ACTION   apply: the uevent's action; \"add\" records the flag of\n"
               "                       the disk added as the kernel's own\n"
               "     --all             restore: every disk\n"
               "     --config-file=PATH  Configuration file (default %s)\n"
               "     --config-dir=DIR  Read DIR/stablepages.conf and DIR/stablepages.conf.d/\n"
               "     --runtime-dir=DIR Runtime state directory (default %s)\n"
               "     --state-dir=DIR   Learned decisions, kept across reboots (default %s)\n"
               "     --sysfs-root=DIR  Read and write sysfs under DIR (testing)\n"
               "     --udev-data-dir=DIR  udev database (default /run/udev/data)\n"
               "     --kernel-release=R  Interpret facts as kernel R (testing)\n"
               "  -v --verbose         Log debug messages\n"
               "     --log-level=LEVEL Log up to LEVEL (err, warning, notice, info, debug)\n"
               "     --log-target=TARGET  auto, console (stderr) or journal\n"
               "     --bus-introspect  Print the D-Bus interfaces as introspection XML\n",
               program_invocation_short_name, CONFIG_FILE, RUNTIME_DIR, STATE_DIR);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_JSON,
                ARG_CONFIG_FILE,
                ARG_CONFIG_DIR,
                ARG_RUNTIME_DIR,
                ARG_STATE_DIR,
                ARG_SYSFS_ROOT,
                ARG_UDEV_DATA_DIR,
                ARG_KERNEL_RELEASE,
                ARG_LOG_LEVEL,
                ARG_BUS_INTROSPECT,
                ARG_LOG_TARGET,
                ARG_ACTION,
                ARG_ALL,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "json", optional_argument, NULL, ARG_JSON },
                { "config-file", required_argument, NULL, ARG_CONFIG_FILE },
                { "config-dir", required_argument, NULL, ARG_CONFIG_DIR },
                { "runtime-dir", required_argument, NULL, ARG_RUNTIME_DIR },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "sysfs-root", required_argument, NULL, ARG_SYSFS_ROOT },
                { "udev-data-dir", required_argument, NULL, ARG_UDEV_DATA_DIR },
                { "kernel-release", required_argument, NULL, ARG_KERNEL_RELEASE },
                { "verbose", no_argument, NULL, 'v' },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                { "bus-introspect", no_argument, NULL, ARG_BUS_INTROSPECT },
                { "log-target", required_argument, NULL, ARG_LOG_TARGET },
                { "action", required_argument, NULL, ARG_ACTION },
                { "all", no_argument, NULL, ARG_ALL },
                {},
        };
        int c, level;

        while ((c = getopt_long(argc, argv, "hv", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("stablepagesd %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_JSON:
                        arg_json = optarg ?: "short";
                        if (!streq(arg_json, "pretty") && !streq(arg_json, "short")) {
                                log_error("--json= takes pretty or short, not \"%s\".", arg_json);
                                return -EINVAL;
                        }
                        break;
                case ARG_CONFIG_FILE:
                        arg_engine.config_file = optarg;
                        break;
                case ARG_CONFIG_DIR:
                        free(arg_config_file_buf);
                        free(arg_dropin_dir_buf);
                        arg_config_file_buf = path_join(optarg, "stablepages.conf");
                        arg_dropin_dir_buf = path_join(optarg, "stablepages.conf.d");
                        if (!arg_config_file_buf || !arg_dropin_dir_buf)
                                return log_oom();
                        arg_engine.config_file = arg_config_file_buf;
                        arg_engine.dropin_dir = arg_dropin_dir_buf;
                        break;
                case ARG_RUNTIME_DIR:
                        arg_engine.runtime_dir = optarg;
                        break;
                case ARG_STATE_DIR:
                        arg_engine.state_dir = optarg;
                        break;
                case ARG_SYSFS_ROOT:
                        arg_engine.sysfs_root = optarg;
                        break;
                case ARG_UDEV_DATA_DIR:
                        arg_engine.udev_data_dir = optarg;
                        break;
                case ARG_KERNEL_RELEASE:
                        arg_engine.kernel_release = optarg;
                        break;
                case 'v':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case ARG_LOG_LEVEL:
                        level = log_level_from_string(optarg);
                        if (level < 0) {
                                log_error("Unknown log level \"%s\".", optarg);
                                return -EINVAL;
                        }
                        log_set_max_level(level);
                        break;
                case ARG_LOG_TARGET:
                        if (streq(optarg, "auto"))
                                log_set_target(LOG_TARGET_AUTO);
                        else if (streq(optarg, "console"))
                                log_set_target(LOG_TARGET_STDERR);
                        else if (streq(optarg, "journal"))
                                log_set_target(LOG_TARGET_JOURNAL);
                        else {
                                log_error("--log-target= takes auto, console or journal, not \"%s\".",
                                          optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_ACTION:
                        arg_action = optarg;
                        break;
                case ARG_ALL:
                        arg_all = true;
                        break;
                case ARG_BUS_INTROSPECT:
                        bus_introspect(stdout);
                        return 0;
                case '?':
                        return -EINVAL;
                default:
                        abort();
                }
        return 1;
}

int main(int argc, char *argv[]) {
        int r = parse_argv(argc, argv);
        if (r <= 0) {
                free(arg_config_file_buf);
                free(arg_dropin_dir_buf);
                return r < 0 ? EXIT_USAGE : EXIT_OK;
        }

        const char *verb = optind < argc ? argv[optind] : NULL;
        char **args = argv + optind + (verb ? 1 : 0);
        int nargs = argc - optind - (verb ? 1 : 0);

        if (!verb)
                r = verb_daemon(&arg_engine);
        else if (streq(verb, "apply"))
                r = exit_code_from_result(verb_apply(&arg_engine, arg_action, args, nargs));
        else if (streq(verb, "restore"))
                r = exit_code_from_result(verb_restore(&arg_engine, arg_all, args, nargs));
        else if (streq(verb, "dump"))
                r = exit_code_from_result(verb_dump(&arg_engine, arg_json, args, nargs));
        else if (streq(verb, "udev-facts"))
                r = exit_code_from_result(verb_udev_facts(&arg_engine, args, nargs));
        else {
                log_error("Unknown verb \"%s\"; see --help.", verb);
                r = EXIT_USAGE;
        }
        free(arg_config_file_buf);
        free(arg_dropin_dir_buf);
        return r;
}
