/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The places of an engine in a throw-away tree (fake-sysfs.h), for the tests of the daemon's own
 * files: the sysfs root ROOT/sys, an empty udev database ROOT/udev, the configuration
 * ROOT/etc/stablepages.conf (and .d), the runtime and state dirs ROOT/run and ROOT/state, and a
 * fixed kernel release. The daemon's code logs to stderr and tells no service manager. */

#include "engine.h"
#include "fake-sysfs.h"
#include "log.h"

typedef struct FakeEngine {
        char *root, *sys, *udev, *conf, *dropins, *run, *state;
        EngineOptions options; /* points to the strings above */
} FakeEngine;

static inline void fake_engine_init(FakeEngine *f) {
        log_set_target(LOG_TARGET_STDERR);
        (void) unsetenv("NOTIFY_SOCKET");
        (void) unsetenv("WATCHDOG_USEC");

        f->root = tree_new();
        f->sys = tree_path(f->root, "sys");
        f->udev = tree_path(f->root, "udev");
        f->conf = tree_path(f->root, "etc/stablepages.conf");
        f->dropins = tree_path(f->root, "etc/stablepages.conf.d");
        f->run = tree_path(f->root, "run");
        f->state = tree_path(f->root, "state");
        tree_mkdir(f->root, "udev");
        tree_mkdir(f->root, "run");
        f->options = (EngineOptions){
                .sysfs_root = f->sys,
                .udev_data_dir = f->udev,
                .config_file = f->conf,
                .dropin_dir = f->dropins,
                .runtime_dir = f->run,
                .state_dir = f->state,
                .kernel_release = "6.1.0",
                .boot_id = "",
        };
}

/* Removes the tree and frees the strings. */
static inline void fake_engine_done(FakeEngine *f) {
        tree_free(f->root);
        free(f->sys);
        free(f->udev);
        free(f->conf);
        free(f->dropins);
        free(f->run);
        free(f->state);
        *f = (FakeEngine){};
}
