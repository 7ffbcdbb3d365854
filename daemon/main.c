/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* stablepagesd's entry point: its options and the table of its verbs (verbs.h); without a verb,
 * the daemon (daemon.c). */
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
static uint64_t arg_diskseq = 0;
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
               "     --diskseq=N       apply: the uevent's disk sequence number; an event of an\n"
               "                       earlier disk of that name is ignored\n"
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
        ARG_DISKSEQ,
        ARG_ALL,
};

/* The options whose value is kept as it is, and where. */
static const struct {
        int option;
        const char **arg;
} string_options[] = {
        { ARG_CONFIG_FILE, &arg_engine.config_file },
        { ARG_RUNTIME_DIR, &arg_engine.runtime_dir },
        { ARG_STATE_DIR, &arg_engine.state_dir },
        { ARG_SYSFS_ROOT, &arg_engine.sysfs_root },
        { ARG_UDEV_DATA_DIR, &arg_engine.udev_data_dir },
        { ARG_KERNEL_RELEASE, &arg_engine.kernel_release },
        { ARG_ACTION, &arg_action },
};

/* Keeps the value of option c when it is one of string_options. Returns whether it was. */
static bool parse_string_option(int c, const char *value) {
        for (size_t i = 0; i < ELEMENTSOF(string_options); i++)
                if (string_options[i].option == c) {
                        *string_options[i].arg = value;
                        return true;
                }
        return false;
}

/* --config-dir=DIR: DIR/stablepages.conf and DIR/stablepages.conf.d/. Returns 0 or -ENOMEM
 * (logged). */
static int parse_config_dir(const char *dir) {
        free(arg_config_file_buf);
        free(arg_dropin_dir_buf);
        arg_config_file_buf = path_join(dir, "stablepages.conf");
        arg_dropin_dir_buf = path_join(dir, "stablepages.conf.d");
        if (!arg_config_file_buf || !arg_dropin_dir_buf)
                return log_oom();
        arg_engine.config_file = arg_config_file_buf;
        arg_engine.dropin_dir = arg_dropin_dir_buf;
        return 0;
}

/* --log-level=LEVEL. Returns 0 or -EINVAL (logged). */
static int parse_log_level(const char *s) {
        int level = log_level_from_string(s);
        if (level < 0) {
                log_error("Unknown log level \"%s\".", s);
                return -EINVAL;
        }
        log_set_max_level(level);
        return 0;
}

/* --log-target=auto|console|journal. Returns 0 or -EINVAL (logged). */
static int parse_log_target(const char *s) {
        if (streq(s, "auto"))
                log_set_target(LOG_TARGET_AUTO);
        else if (streq(s, "console"))
                log_set_target(LOG_TARGET_STDERR);
        else if (streq(s, "journal"))
                log_set_target(LOG_TARGET_JOURNAL);
        else {
                log_error("--log-target= takes auto, console or journal, not \"%s\".", s);
                return -EINVAL;
        }
        return 0;
}

/* --diskseq=N; empty: the event carried none (a kernel before 5.15), 0. Returns 0 or -EINVAL
 * (logged). */
static int parse_diskseq(const char *s) {
        long long v = 0;
        if (!isempty(s) && parse_int_range(s, 1, INT64_MAX, &v) < 0) {
                log_error("--diskseq= takes a disk sequence number, not \"%s\".", s);
                return -EINVAL;
        }
        arg_diskseq = (uint64_t) v;
        return 0;
}

/* --json[=pretty|short]: no value is short. Returns 0 or -EINVAL (logged). */
static int parse_json(const char *s) {
        arg_json = s ?: "short";
        if (!streq(arg_json, "pretty") && !streq(arg_json, "short")) {
                log_error("--json= takes pretty or short, not \"%s\".", arg_json);
                return -EINVAL;
        }
        return 0;
}

/* Returns 1 to go on to the verb, 0 when done (--help, --version, --bus-introspect), or -errno
 * (logged). */
static int parse_argv(int argc, char *argv[]) {
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
                { "diskseq", required_argument, NULL, ARG_DISKSEQ },
                { "all", no_argument, NULL, ARG_ALL },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "hv", options, NULL)) >= 0) {
                int r = 0;

                if (parse_string_option(c, optarg))
                        continue;
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("stablepagesd %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_BUS_INTROSPECT:
                        bus_introspect(stdout);
                        return 0;
                case ARG_JSON:
                        r = parse_json(optarg);
                        break;
                case ARG_CONFIG_DIR:
                        r = parse_config_dir(optarg);
                        break;
                case 'v':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case ARG_LOG_LEVEL:
                        r = parse_log_level(optarg);
                        break;
                case ARG_LOG_TARGET:
                        r = parse_log_target(optarg);
                        break;
                case ARG_DISKSEQ:
                        r = parse_diskseq(optarg);
                        break;
                case ARG_ALL:
                        arg_all = true;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        abort();
                }
                if (r < 0)
                        return r;
        }
        return 1;
}

static int run_apply(char **args, int n) {
        return verb_apply(&arg_engine, arg_action, arg_diskseq, args, n);
}

static int run_restore(char **args, int n) {
        return verb_restore(&arg_engine, arg_all, args, n);
}

static int run_dump(char **args, int n) {
        return verb_dump(&arg_engine, arg_json, args, n);
}

static int run_udev_facts(char **args, int n) {
        return verb_udev_facts(&arg_engine, args, n);
}

/* The verbs, each run with what the options set (verbs.h); without a verb, the daemon. */
typedef struct Verb {
        const char *name;
        int (*run)(char **args, int n); /* 0 or -errno */
} Verb;

static const Verb verbs[] = {
        { "apply", run_apply },
        { "restore", run_restore },
        { "dump", run_dump },
        { "udev-facts", run_udev_facts },
};

/* Runs the verb of that name on args. Returns the exit code; EXIT_USAGE for no such verb
 * (logged). */
static int run_verb(const char *name, char **args, int n) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, name))
                        return exit_code_from_result(verbs[i].run(args, n));
        log_error("Unknown verb \"%s\"; see --help.", name);
        return EXIT_USAGE;
}

int main(int argc, char *argv[]) {
        int r = parse_argv(argc, argv);
        if (r > 0) {
                const char *verb = optind < argc ? argv[optind] : NULL;
                char **args = argv + optind + (verb ? 1 : 0);
                int nargs = argc - optind - (verb ? 1 : 0);

                r = verb ? run_verb(verb, args, nargs) : verb_daemon(&arg_engine);
        } else
                r = r < 0 ? EXIT_USAGE : EXIT_OK;
        free(arg_config_file_buf);
        free(arg_dropin_dir_buf);
        return r;
}
