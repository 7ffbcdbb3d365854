/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* stablepagesctl's entry point: its options, the verb table that dispatches to the ctl-*.c files,
 * and the JSON and pager setup the verbs share. */
#include <getopt.h>

#include "config-build.h"
#include "ctl.h"
#include "log.h"
#include "pager.h"
#include "polkit-agent.h"
#include "util.h"

JsonMode arg_json = JSON_OFF;
bool arg_legend = true;
bool arg_runtime = false;
bool arg_force = false;
bool arg_apply = false;
bool arg_remount = false;
bool arg_bind_name = false;
bool arg_ask_password = true;
const char *arg_config_file = NULL;
const char *arg_config_dir = NULL;
static bool arg_pager = true;

typedef struct Verb {
        const char *name;
        int min_args, max_args; /* not counting the verb; -1: unlimited */
        int (*dispatch)(int argc, char **argv);
} Verb;

static const Verb verbs[] = {
        { "status", 0, -1, verb_status },
        { "explain", 1, 1, verb_explain },
        { "stats", 0, 1, verb_stats },
        { "set", 2, 2, verb_set },
        { "reset", 1, 1, verb_reset },
        { "apply", 0, -1, verb_apply },
        { "reload", 0, 0, verb_reload },
        { "monitor", 0, 0, verb_monitor },
        { "check-config", 0, 1, verb_check_config },
        { "show-config", 0, 0, verb_show_config },
};

static void help(void) {
        printf("%s [OPTIONS...] COMMAND ...\n\n"
               "Show and control the stable-writes decisions of stablepagesd.\n\n"
               "Commands:\n"
               "  status [DEVICE...]        Show need, kernel state, desired state, mounts\n"
               "  explain DEVICE            Show why: the reasons chain and the decision\n"
               "  stats [DEVICE]            Show the measured writer stalls as histograms\n"
               "  set DEVICE on|off|auto    Override the decision for a disk\n"
               "  reset DEVICE              Remove the overrides of a disk, say which\n"
               "  apply [DEVICE...]         Apply the decisions now\n"
               "  reload                    Make the daemon re-read its configuration\n"
               "  monitor                   Print changes as they happen\n"
               "  check-config [FILE]       Check the configuration, report file:line\n"
               "  show-config               Show the configuration in force, each key with its\n"
               "                            file:line\n\n"
               "Options:\n"
               "  -h --help                 Show this help\n"
               "     --version              Show package version\n"
               "     --json=pretty|short|off\n"
               "                            Print JSON (or not: off)\n"
               "     --no-legend            Do not print the table header\n"
               "     --no-pager             Do not pipe output into a pager\n"
               "     --no-ask-password      Do not ask for a password (no polkit agent)\n"
               "     --runtime              set/reset: only for this disk until it goes away\n"
               "                            (bound to its diskseq, kept in /run)\n"
               "     --bind=id|name         set: bind a persistent override to the disk's\n"
               "                            stable ID (default) or to its kernel name\n"
               "                            (never with --force)\n"
               "     --force                set: allow off on a device that needs stable writes\n"
               "     --apply                set: apply the new decision now\n"
               "     --remount              apply: cycle idle mounted filesystems\n"
               "     --config-dir=DIR       check-config, show-config and the no-daemon\n"
               "                            fallback: read DIR/stablepages.conf and\n"
               "                            DIR/stablepages.conf.d/\n\n"
               "Exit status: 0 success, 1 failure, 2 usage, 4 no such device.\n"
               "See stablepagesctl(1).\n",
               program_invocation_short_name);
}

enum {
        ARG_VERSION = 0x100,
        ARG_JSON,
        ARG_NO_LEGEND,
        ARG_NO_PAGER,
        ARG_RUNTIME,
        ARG_FORCE,
        ARG_APPLY,
        ARG_REMOUNT,
        ARG_CONFIG_DIR,
        ARG_BIND,
        ARG_NO_ASK_PASSWORD,
};

/* The options that only set a flag, and what they set it to. */
static const struct {
        int option;
        bool *arg;
        bool value;
} flag_options[] = {
        { ARG_NO_LEGEND, &arg_legend, false },
        { ARG_NO_PAGER, &arg_pager, false },
        { ARG_RUNTIME, &arg_runtime, true },
        { ARG_FORCE, &arg_force, true },
        { ARG_APPLY, &arg_apply, true },
        { ARG_REMOUNT, &arg_remount, true },
        { ARG_NO_ASK_PASSWORD, &arg_ask_password, false },
};

/* Sets the flag of option c when it is one of flag_options. Returns whether it was. */
static bool parse_flag_option(int c) {
        for (size_t i = 0; i < ELEMENTSOF(flag_options); i++)
                if (flag_options[i].option == c) {
                        *flag_options[i].arg = flag_options[i].value;
                        return true;
                }
        return false;
}

/* --json[=pretty|short|off]: no value is short. Returns the mode, or -EINVAL (logged). */
static int parse_json_mode(const char *s) {
        if (!s || streq(s, "short"))
                return JSON_SHORT;
        if (streq(s, "pretty"))
                return JSON_PRETTY;
        if (streq(s, "off"))
                return JSON_OFF;
        return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "--json= takes pretty, short or off, not \"%s\".",
                               s);
}

/* --bind=id|name. Returns whether the override binds to the kernel name, or -EINVAL (logged). */
static int parse_bind(const char *s) {
        if (!streq(s, "id") && !streq(s, "name"))
                return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "--bind= takes id or name, not \"%s\".", s);
        return streq(s, "name");
}

/* Returns 1 to go on to the verb, 0 when done (--help, --version), or -EINVAL (logged). */
static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "json", optional_argument, NULL, ARG_JSON },
                { "no-legend", no_argument, NULL, ARG_NO_LEGEND },
                { "no-pager", no_argument, NULL, ARG_NO_PAGER },
                { "runtime", no_argument, NULL, ARG_RUNTIME },
                { "force", no_argument, NULL, ARG_FORCE },
                { "apply", no_argument, NULL, ARG_APPLY },
                { "remount", no_argument, NULL, ARG_REMOUNT },
                { "config-dir", required_argument, NULL, ARG_CONFIG_DIR },
                { "bind", required_argument, NULL, ARG_BIND },
                { "no-ask-password", no_argument, NULL, ARG_NO_ASK_PASSWORD },
                {},
        };
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                if (parse_flag_option(c))
                        continue;
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("stablepagesctl %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_JSON:
                        r = parse_json_mode(optarg);
                        if (r < 0)
                                return r;
                        arg_json = r;
                        break;
                case ARG_CONFIG_DIR:
                        arg_config_dir = optarg;
                        break;
                case ARG_BIND:
                        r = parse_bind(optarg);
                        if (r < 0)
                                return r;
                        arg_bind_name = r;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        abort();
                }
        }
        return 1;
}

void ctl_json_begin(JsonWriter *w) {
        json_init(w, stdout, arg_json == JSON_PRETTY);
}

void ctl_json_end(JsonWriter *w) {
        if (!w->pretty) /* a pretty document ends with its newline */
                fputc('\n', w->f);
}

void ctl_pager_open(void) {
        if (arg_pager && arg_json == JSON_OFF)
                pager_open();
}

int main(int argc, char *argv[]) {
        int r;

        log_set_target(LOG_TARGET_STDERR);
        r = parse_argv(argc, argv);
        if (r <= 0)
                return exit_code_from_result(r);

        const char *name = optind < argc ? argv[optind] : "status";
        int nargs = optind < argc ? argc - optind - 1 : 0;
        char **args = optind < argc ? argv + optind + 1 : argv + argc;

        for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
                const Verb *v = &verbs[i];
                if (!streq(v->name, name))
                        continue;
                if (nargs < v->min_args || (v->max_args >= 0 && nargs > v->max_args))
                        return exit_code_from_result(
                                log_error_errno(SYNTHETIC_ERRNO(EINVAL),
                                                "%s: wrong number of arguments; see --help.", name));
                r = v->dispatch(nargs, args);
                pager_close();
                polkit_agent_close();
                /* Whatever printed "error:" failed, whatever the verb thought. */
                if (r >= 0 && log_get_n_errors() > 0)
                        return EXIT_FAIL;
                return exit_code_from_result(r);
        }
        return exit_code_from_result(
                log_error_errno(SYNTHETIC_ERRNO(EINVAL), "Unknown command \"%s\"; see --help.", name));
}
