/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the files of the Remounter share: remount.c (its life and its queue), remount-start.c
 * (the checks and the start of a cycle), remount-follow.c (the cycle's process: its report or
 * its death), remount-unmounted.c (the filesystems left unmounted, the journals found at
 * start), remount-conclude.c (each filesystem's result, log line and note) and
 * remount-active.c (the records and the list of what is left unmounted). Not for the rest of
 * the daemon: its interface is remount.h. */

#include "remount.h"

/* What the last cycle or check of a mount point said. */
typedef struct RemountNote {
        char *target;
        int id;              /* the mount it was about */
        bool sticky;         /* a failed cycle: no automatic cycle of this mount point any more */
        uint64_t until_usec; /* CLOCK_MONOTONIC: no automatic check of mount id before */
        char *reason;        /* the pending reason shown meanwhile */
} RemountNote;

typedef struct RemountItem {
        int id;
        char *target, *disk;
} RemountItem;

typedef struct RemountRequest {
        struct RemountRequest *next;
        bool explicit;
        remount_done_t done;
        void *userdata;
        RemountItem *items;
        size_t n_items, pos;
        RemountResult *results;
        size_t n_results;
} RemountRequest;

/* A cycle, or a filesystem a cycle left unmounted (mounted back from its journal: replays). */
typedef struct RemountActive {
        RemountRequest *request; /* whom to tell; NULL once told */
        RemountItem item;
        char *label; /* "TARGET (FSTYPE on DISK)" */
        RemountJournal journal;
        char *journal_path;
        char *options;
        int disk_fd;  /* the disk's sysfs directory, pinned (flag.h): the child writes its flag */
        bool replay;  /* mount it back as the journal says */
        bool give_up; /* left unmounted, and retrying cannot help */
        bool checked; /* a replay (or the cycle) found it unmounted: not just read from a journal */
        char *reason; /* why it is not mounted, while it is not */
        pid_t pid;
        int report_fd;
        sd_event_source *io;
        uint64_t start_usec;
        unsigned retries;
        uint64_t backoff_usec;
        uint64_t due_usec; /* CLOCK_MONOTONIC: its next replay */
} RemountActive;

struct Remounter {
        RemountHost host;
        sd_event_source *defer, *retry;
        RemountRequest *queue;     /* the head is the request being worked on */
        RemountActive *running;    /* the cycle or replay whose process runs */
        RemountActive **unmounted; /* left unmounted: waiting for a replay, or given up */
        size_t n_unmounted;
        RemountNote *notes;
        size_t n_notes;
        char **retired; /* reasons of notes replaced since remount_annotate(): a tracked mount may
                         * still show one, so they are freed there */
        size_t n_retired;
        unsigned test_fail_mounts;
        uint64_t test_job_timeout_usec;
        bool test_skip_scan;
        char *test_pause;
};

/* How one filesystem's cycle, or the decision not to cycle it, ended: what conclude() reports. */
typedef struct Conclusion {
        const RemountItem *item;
        const char *label; /* how the logs name it; NULL: its target */
        int id;            /* the mount id its note is about */
        RemountOutcome outcome;
        const char *why;    /* the bare reason, for everyone ("busy: a process has a file open on it") */
        const char *detail; /* the same naming another user's process or file, for root ("busy: PID
                             * 5 (sleep) has a file open on it: /x/y"); NULL: why says it all */
        const char *via;    /* what ran the cycle ("systemd", "the daemon"); NULL: "?" */
        uint64_t duration_usec;
        bool is_static;              /* a refusal that holds while the mount stays as it is: no re-check */
        bool pending;                /* the flag waits for a cycle: say so */
        bool stale;                  /* not mounted back: its disk or filesystem is another one now */
        const RemountActive *active; /* the cycle, for the retry of a filesystem left unmounted */
} Conclusion;

/* remount-active.c */
void item_done(RemountItem *i);
void result_done(RemountResult *r);
void request_free(RemountRequest *q);
void active_free(RemountActive *a);
void schedule(Remounter *r);
void unmounted_take(Remounter *r, RemountActive *a);
int unmounted_add(Remounter *r, RemountActive *a);
const RemountActive *holder_of(const Remounter *r, const char *disk);
const TrackedMount *find_tracked(const Remounter *r, int id, const char *target);
int open_flag(Remounter *r, RemountActive *a, char **ret_reason);
void finish(Remounter *r, RemountActive *a);
void reload_journal(RemountActive *a);

/* remount-conclude.c */
RemountNote *note_find(Remounter *r, const char *target);
void retired_free(Remounter *r, MountTracker *t);
void conclude(Remounter *r, RemountRequest *q, const Conclusion *c);

/* remount-start.c */
int start_item(Remounter *r, RemountRequest *q, const RemountItem *it);

/* remount-follow.c */
int spawn(Remounter *r, RemountActive *a);
void follow(Remounter *r, RemountActive *a);

/* remount-unmounted.c */
void arm_retry(Remounter *r);
void park(Remounter *r, RemountActive *a, const char *why);
void load_journals(Remounter *r);
