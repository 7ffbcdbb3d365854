/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Authorization of the mutating D-Bus calls through polkit (bus-polkit.h): each caller's checks
 * in turn, bounded per user and in all, answered when polkit replies. */
#include <inttypes.h>

#include "bus-api.h"
#include "bus-polkit.h"
#include "log.h"
#include "util.h"

#define MAX_CALLERS 64 /* connections remembered, with their uid or its lookup */
#define MAX_ACTIONS 4

/* A connection that called, by its unique name (never given to another connection). */
typedef struct Caller {
        BusAuth *auth;
        char *sender;
        uid_t uid;
        bool known;
        sd_bus_slot *lookup; /* GetConnectionUnixUser in flight */
        unsigned waiting;    /* calls waiting for the lookup */
        uint64_t used;       /* for eviction: the least recently used known entry goes */
} Caller;

typedef struct PendingAuth {
        BusAuth *auth;
        sd_bus_message *message; /* the caller's call */
        Caller *caller;          /* while its uid is looked up, else NULL */
        sd_bus_slot *slot;       /* CheckAuthorization in flight */
        uint64_t seq;            /* the order calls came in */
        uid_t uid;
        const char *actions[MAX_ACTIONS + 1];
        size_t next; /* the action being checked */
        bus_authorized_t run;
        void *userdata;
} PendingAuth;

/* A user with checks waiting for polkit, or calls refused. */
typedef struct AuthUser {
        uid_t uid;
        unsigned pending;
        uint64_t refused;
} AuthUser;

struct BusAuth {
        sd_bus *bus;
        PendingAuth **pending; /* waiting for a uid or for polkit */
        size_t n_pending, n_checks;
        AuthUser users[BUS_AUTH_MAX_PENDING + 1];
        size_t n_users;
        uint64_t refused_all; /* refused since all BUS_AUTH_MAX_PENDING checks were taken */
        Caller callers[MAX_CALLERS];
        uint64_t clock, seq;
};

int bus_auth_new(sd_bus *bus, BusAuth **ret) {
        BusAuth *a = calloc(1, sizeof(BusAuth));
        if (!a)
                return -ENOMEM;
        a->bus = sd_bus_ref(bus);
        *ret = a;
        return 0;
}

static void pending_auth_free(PendingAuth *p) {
        sd_bus_slot_unref(p->slot);
        sd_bus_message_unref(p->message);
        free(p);
}

BusAuth *bus_auth_free(BusAuth *a) {
        if (!a)
                return NULL;
        for (size_t i = 0; i < a->n_pending; i++)
                pending_auth_free(a->pending[i]);
        free(a->pending);
        for (size_t i = 0; i < MAX_CALLERS; i++) {
                sd_bus_slot_unref(a->callers[i].lookup);
                free(a->callers[i].sender);
        }
        sd_bus_unref(a->bus);
        return mfree(a);
}

static AuthUser *user_find(BusAuth *a, uid_t uid) {
        for (size_t i = 0; i < a->n_users; i++)
                if (a->users[i].uid == uid)
                        return &a->users[i];
        return NULL;
}

/* Forgets u when nothing of it is left to tell. */
static void user_release(BusAuth *a, AuthUser *u) {
        if (u->pending > 0)
                return;
        if (u->refused > 0)
                log_notice("uid %u: %" PRIu64 " call(s) were refused while its authorization checks waited "
                           "for polkit.",
                           (unsigned) u->uid, u->refused);
        *u = a->users[--a->n_users];
}

static int pending_add(BusAuth *a, PendingAuth *p) {
        PendingAuth **l = reallocarray(a->pending, a->n_pending + 1, sizeof(PendingAuth *));
        if (!l)
                return -ENOMEM;
        a->pending = l;
        a->pending[a->n_pending++] = p;
        return 0;
}

static void pending_remove(BusAuth *a, PendingAuth *p) {
        for (size_t i = 0; i < a->n_pending; i++)
                if (a->pending[i] == p) {
                        a->pending[i] = a->pending[--a->n_pending];
                        break;
                }
}

/* A check polkit answered (or could not be asked): p goes. */
static void check_done(PendingAuth *p) {
        BusAuth *a = p->auth;
        AuthUser *u = user_find(a, p->uid);

        pending_remove(a, p);
        a->n_checks--;
        if (u) {
                u->pending--;
                user_release(a, u);
        }
        if (a->refused_all > 0 && a->n_checks < BUS_AUTH_MAX_PENDING) {
                log_notice("%" PRIu64
                           " call(s) were refused while %d authorization checks waited for polkit.",
                           a->refused_all, BUS_AUTH_MAX_PENDING);
                a->refused_all = 0;
        }
        pending_auth_free(p);
}

static int on_polkit_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error);

static int ask_polkit(PendingAuth *p) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        int r;

        p->slot = sd_bus_slot_unref(p->slot);
        r = sd_bus_message_new_method_call(p->auth->bus, &call, "org.freedesktop.PolicyKit1",
                                           "/org/freedesktop/PolicyKit1/Authority",
                                           "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization");
        if (r >= 0)
                r = sd_bus_message_append(
                        call, "(sa{sv})sa{ss}us", "system-bus-name", 1, "name", "s",
                        sd_bus_message_get_sender(p->message), p->actions[p->next], 0,
                        (uint32_t) sd_bus_message_get_allow_interactive_authorization(p->message), "");
        if (r >= 0)
                r = sd_bus_call_async(p->auth->bus, &p->slot, call, on_polkit_reply, p,
                                      BUS_POLKIT_TIMEOUT_USEC);
        return r;
}

/* Runs p's function and answers its call with what it returns. */
static void run_authorized(PendingAuth *p) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = p->run(p->message, p->userdata, &error);
        if (r < 0)
                r = sd_bus_reply_method_errno(p->message, r, &error);
        if (r < 0)
                log_debug_errno(r, "Cannot answer an authorized call: %m");
}

static int on_polkit_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PendingAuth *p = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        const char *action = p->actions[p->next];
        int authorized = 0, challenge = 0, r;

        if (e) {
                if (sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                        r = sd_bus_reply_method_errorf(p->message, BUS_ERROR_ACCESS_DENIED,
                                                       "polkit is not running: only root may change stable "
                                                       "writes");
                else
                        r = sd_bus_reply_method_errorf(p->message, BUS_ERROR_ACCESS_DENIED,
                                                       "polkit could not decide on %s: %s", action,
                                                       e->message ?: e->name);
                goto done;
        }
        r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
        if (r >= 0)
                r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
        if (r < 0) {
                r = sd_bus_reply_method_errorf(p->message, BUS_ERROR_ACCESS_DENIED, "bad reply from polkit");
                goto done;
        }
        if (!authorized) {
                r = sd_bus_reply_method_errorf(p->message, BUS_ERROR_ACCESS_DENIED,
                                               "Access denied: not authorized for %s%s", action,
                                               challenge ? " (authentication required)" : "");
                goto done;
        }
        if (p->actions[++p->next]) {
                r = ask_polkit(p);
                if (r >= 0)
                        return 1; /* the next action */
                r = sd_bus_reply_method_errorf(p->message, BUS_ERROR_ACCESS_DENIED, "Cannot ask polkit: %s",
                                               strerror(-r));
                goto done;
        }
        run_authorized(p);
done:
        if (r < 0)
                log_debug_errno(r, "Cannot answer a call after polkit's answer: %m");
        check_done(p);
        return 1;
}

/* Answers a call over a bound; what says which ("16 of this user"). */
static int refuse(sd_bus_error *error, const char *what) {
        return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                 "Too many authorization checks wait for polkit (%s); try again once they "
                                 "are answered",
                                 what);
}

/* The checks waiting beyond each user's first. */
static size_t checks_beyond_first(const BusAuth *a) {
        return a->n_checks - a->n_users; /* every user listed has a check waiting */
}

/* Refuses a further check of u, a user with checks waiting, over its own bound or over the
 * share of all users' further checks. Returns 0 when it may go on, else what a method handler
 * returns (p is then freed). */
static int refuse_further(BusAuth *a, AuthUser *u, PendingAuth *p, sd_bus_error *error) {
        char what[128];
        int r;

        if (u->pending >= BUS_AUTH_MAX_PENDING_PER_UID) {
                if (u->refused++ == 0)
                        log_warning(
                                "uid %u has %u authorization checks waiting for polkit: its further calls "
                                "are refused until polkit answers.",
                                (unsigned) u->uid, u->pending);
                snprintf(what, sizeof what, "%u of this user", u->pending);
        } else if (checks_beyond_first(a) >= BUS_AUTH_MAX_PENDING - BUS_AUTH_RESERVED_FIRST) {
                if (u->refused++ == 0)
                        log_warning(
                                "uid %u has %u authorization checks waiting for polkit and the users with "
                                "checks waiting hold %zu beyond their first: its further calls are "
                                "refused until polkit answers; the first call of another user is still "
                                "taken.",
                                (unsigned) u->uid, u->pending, checks_beyond_first(a));
                snprintf(what, sizeof what, "%u of this user, %zu of users beyond their first", u->pending,
                         checks_beyond_first(a));
        } else
                return 0;
        r = refuse(error, what);
        pending_auth_free(p);
        return r;
}

/* The uid of p's caller is known: runs p (root), asks polkit, or refuses it over a bound.
 * Returns what a method handler returns; p is taken (freed, or on the list of checks). */
static int start_check(PendingAuth *p, sd_bus_error *error) {
        BusAuth *a = p->auth;
        AuthUser *u = user_find(a, p->uid);
        int r;

        if (p->uid == 0) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = sd_bus_message_ref(p->message);
                bus_authorized_t run = p->run;
                void *userdata = p->userdata;
                pending_auth_free(p);
                return run(m, userdata, error);
        }
        /* users[] lists the users with checks waiting: u is NULL for a first check. */
        if (u && (r = refuse_further(a, u, p, error)) != 0)
                return r;
        if (a->n_checks >= BUS_AUTH_MAX_PENDING) {
                char what[64];
                if (a->refused_all++ == 0)
                        log_warning(
                                "%zu authorization checks of %zu users wait for polkit: further calls are "
                                "refused until polkit answers.",
                                a->n_checks, a->n_users);
                snprintf(what, sizeof what, "%zu", a->n_checks);
                r = refuse(error, what);
                pending_auth_free(p);
                return r;
        }
        r = pending_add(a, p);
        if (r < 0) {
                pending_auth_free(p);
                return r;
        }
        if (!u) {
                u = &a->users[a->n_users++]; /* fits: one per check at most, plus this one */
                *u = (AuthUser){ .uid = p->uid };
        }
        u->pending++;
        a->n_checks++;
        r = ask_polkit(p);
        if (r < 0) {
                check_done(p);
                return sd_bus_error_setf(error, BUS_ERROR_ACCESS_DENIED, "Cannot ask polkit: %s",
                                         strerror(-r));
        }
        return 1; /* answered later */
}

/* start_check() for a call that waited for its caller's uid: answers it here. */
static void start_check_later(PendingAuth *p) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = sd_bus_message_ref(p->message);

        int r = start_check(p, &error);
        if (r < 0)
                r = sd_bus_reply_method_errno(m, r, &error);
        if (r < 0)
                log_debug_errno(r, "Cannot answer a call: %m");
}

static int cmp_seq(const void *x, const void *y) {
        const PendingAuth *a = *(PendingAuth *const *) x, *b = *(PendingAuth *const *) y;
        return (a->seq > b->seq) - (a->seq < b->seq);
}

static int on_lookup_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Caller *c = userdata;
        BusAuth *a = c->auth;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        _cleanup_free_ PendingAuth **waiting = calloc(c->waiting + 1, sizeof(PendingAuth *));
        uint32_t uid = 0;
        size_t n = 0;
        int r = e ? -sd_bus_error_get_errno(e) : sd_bus_message_read(reply, "u", &uid);

        c->lookup = sd_bus_slot_unref(c->lookup);
        c->known = r >= 0;
        c->uid = (uid_t) uid;
        if (!waiting)
                return log_oom(); /* they stay waiting, for nothing: their callers time out */
        /* The calls that waited for it, in the order they came. */
        for (size_t i = 0; i < a->n_pending;)
                if (a->pending[i]->caller == c) {
                        waiting[n++] = a->pending[i];
                        a->pending[i] = a->pending[--a->n_pending];
                } else
                        i++;
        c->waiting = 0;
        qsort(waiting, n, sizeof(PendingAuth *), cmp_seq);
        for (size_t i = 0; i < n; i++) {
                PendingAuth *p = waiting[i];
                p->caller = NULL;
                p->uid = c->uid;
                if (c->known) {
                        start_check_later(p);
                        continue;
                }
                (void) sd_bus_reply_method_errorf(p->message, BUS_ERROR_ACCESS_DENIED,
                                                  "Cannot determine the caller: %s",
                                                  e ? e->message ?: e->name : strerror(-r));
                pending_auth_free(p);
        }
        return 1;
}

/* The caller entry of sender: found, or made (evicting the least recently used known one), or
 * NULL when every entry waits for a lookup. */
static Caller *caller_get(BusAuth *a, const char *sender) {
        Caller *victim = NULL;

        for (size_t i = 0; i < MAX_CALLERS; i++) {
                Caller *c = &a->callers[i];
                if (c->sender && streq(c->sender, sender)) {
                        c->used = ++a->clock;
                        return c;
                }
                if (!c->lookup && (!victim || !c->sender || (victim->sender && c->used < victim->used)))
                        victim = c;
        }
        if (!victim)
                return NULL;
        free(victim->sender);
        *victim = (Caller){ .sender = strdup(sender), .used = ++a->clock };
        return victim->sender ? victim : NULL;
}

/* The uid of m's sender, asked from dbus-daemon and waited for: when no lookup can be made the
 * asynchronous way. */
static int sender_uid_now(sd_bus_message *m, uid_t *ret) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        /* Not augmented: the EUID is dbus-daemon's UnixUserID (SO_PEERCRED), not read from /proc. */
        int r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID, &creds);
        return r < 0 ? r : sd_bus_creds_get_euid(creds, ret);
}

int bus_authorize(BusAuth *a, sd_bus_message *m, const char *const *actions, bus_authorized_t run,
                  void *userdata, sd_bus_error *error) {
        const char *sender = sd_bus_message_get_sender(m);
        Caller *c = sender ? caller_get(a, sender) : NULL;
        PendingAuth *p;
        int r;

        p = calloc(1, sizeof(PendingAuth));
        if (!p)
                return -ENOMEM;
        *p = (PendingAuth){ .auth = a,
                            .message = sd_bus_message_ref(m),
                            .seq = ++a->seq,
                            .run = run,
                            .userdata = userdata };
        for (size_t i = 0; i < MAX_ACTIONS && actions[i]; i++)
                p->actions[i] = actions[i];

        if (c && c->known) {
                p->uid = c->uid;
                return start_check(p, error);
        }
        if (c && !c->lookup) {
                c->auth = a;
                r = sd_bus_call_method_async(a->bus, &c->lookup, "org.freedesktop.DBus",
                                             "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                             "GetConnectionUnixUser", on_lookup_reply, c, "s", sender);
                if (r < 0)
                        c->lookup = NULL;
        }
        if (c && c->lookup) {
                if (c->waiting >= BUS_AUTH_MAX_PENDING_PER_UID) {
                        char what[64];
                        snprintf(what, sizeof what, "%u of this connection", c->waiting);
                        pending_auth_free(p);
                        return refuse(error, what);
                }
                r = pending_add(a, p);
                if (r < 0) {
                        pending_auth_free(p);
                        return r;
                }
                p->caller = c;
                c->waiting++;
                return 1; /* on_lookup_reply() goes on */
        }
        /* Every entry waits for a lookup (a burst of new connections): ask and wait. */
        r = sender_uid_now(m, &p->uid);
        if (r < 0) {
                pending_auth_free(p);
                return sd_bus_error_setf(error, BUS_ERROR_ACCESS_DENIED, "Cannot determine the caller: %s",
                                         strerror(-r));
        }
        return start_check(p, error);
}
