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

/* How one filesystem's cycle, or the decision not to cycle it, ended: what remount_conclude() reports. */
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

/* remount-active.c: the records */
void remount_item_done(RemountItem *i);
void remount_result_done(RemountResult *r);
void remount_request_free(RemountRequest *q);
void remount_active_free(RemountActive *a);
/* Runs the queue at the next iteration of the event loop. */
void remount_schedule(Remounter *r);
/* Takes a from the list of filesystems left unmounted, if it is there. */
void remount_unmounted_take(Remounter *r, RemountActive *a);
/* Adds a to the list of filesystems left unmounted. Returns 0 or -ENOMEM. */
int remount_unmounted_add(Remounter *r, RemountActive *a);
/* The cycle, replay or left-unmounted filesystem that holds disk, or NULL. */
const RemountActive *remount_holder_of(const Remounter *r, const char *disk);
/* The tracked mount id on target, else the one on target, or NULL. */
const TrackedMount *remount_find_tracked(const Remounter *r, int id, const char *target);
/* Pins the sysfs directory of a's disk into a->disk_fd: 0, or -errno (a sentence in
 * *ret_reason when ret_reason is not NULL). */
int remount_open_flag(Remounter *r, RemountActive *a, char **ret_reason);
/* The cycle or replay is over: removes its journal and frees a. */
void remount_finish(Remounter *r, RemountActive *a);
/* Takes what the child wrote to a's journal (its stage, where and how it unmounted). */
void remount_reload_journal(RemountActive *a);

/* remount-conclude.c: results, log lines, notes */
/* The note of target (why its flag is still pending), or NULL. */
RemountNote *remount_note_find(Remounter *r, const char *target);
/* Points the tracked mounts of t (may be NULL) away from the retired reasons, and frees them. */
void remount_retired_free(Remounter *r, MountTracker *t);
/* Builds the result of c, logs it, keeps the note, tells the host and the request q (may be
 * NULL). Takes nothing. */
void remount_conclude(Remounter *r, RemountRequest *q, const Conclusion *c);

/* remount-start.c: the start of a cycle */
/* Checks it and, when nothing is against it, starts its cycle: 1 when a child runs (the result
 * comes later), 0 when concluded here, or -errno (not concluded). */
int remount_start_item(Remounter *r, RemountRequest *q, const RemountItem *it);

/* remount-follow.c: the cycle's process */
/* Forks the child that runs a's job and watches for its report: 0 (a->io NULL when it cannot be
 * watched: the caller waits with remount_follow()), or -errno. */
int remount_spawn(Remounter *r, RemountActive *a);
/* Reads a's report (or how its process died) and acts on it. */
void remount_follow(Remounter *r, RemountActive *a);

/* remount-unmounted.c: what is left unmounted */
/* Arms the retry timer for the earliest replay due (or disarms it). */
void remount_arm_retry(Remounter *r);
/* a is left unmounted for why: it waits for its next replay (or for someone to mount it). */
void remount_park(Remounter *r, RemountActive *a, const char *why);
/* Takes the journals an earlier run left in flight: each is replayed first thing. */
void remount_load_journals(Remounter *r);
