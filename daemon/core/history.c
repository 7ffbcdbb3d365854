/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The per-disk history of queue/stable_writes (history.h): text format, and the files under
 * RUNTIME_DIR/history/ written under one lock (RUNTIME_DIR/history/.lock). */
#include <fcntl.h>
#include <inttypes.h>
#include <sys/file.h>

#include "history.h"
#include "util.h"

void history_done(FlagHistory *h) {
        free(h->disk);
        free(h->first_by);
        for (size_t i = 0; i < h->n_changes; i++)
                free(h->changes[i].writer);
        free(h->changes);
        *h = (FlagHistory){};
}

int history_last(const FlagHistory *h) {
        return h->n_changes > 0 ? h->changes[h->n_changes - 1].value : h->first;
}

/* A writer as the file holds it: one word ("?" when empty, blanks as "-"). NULL on -ENOMEM. */
static char *writer_dup(const char *w) {
        char *s = strdup(isempty(w) ? "?" : w);

        for (char *c = s; c && *c; c++)
                if (*c == ' ' || *c == '\t' || *c == '\n' || *c == '=')
                        *c = '-';
        return s;
}

char *history_format(const FlagHistory *h) {
        char *buf = NULL, devnum[32];
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        fprintf(f, "version=1\ndisk=%s\ndiskseq=%" PRIu64 "\ndevnum=%s\nfirst=%d %s %" PRIu64 " %s\n",
                h->disk, h->diskseq, format_devnum(h->devnum, devnum), h->first,
                h->first_at_add ? "add" : "later", h->first_usec, h->first_by ?: "?");
        if (h->dropped > 0)
                fprintf(f, "dropped=%" PRIu64 "\n", h->dropped);
        for (size_t i = 0; i < h->n_changes; i++)
                fprintf(f, "change=%d %" PRIu64 " %s\n", h->changes[i].value, h->changes[i].usec,
                        h->changes[i].writer ?: "?");
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* Parses "V USEC WRITER" (with at: "V AT USEC WRITER"). Returns 0 or -EBADMSG/-ENOMEM. */
static int parse_event(const char *value, bool with_at, int *ret_value, bool *ret_at_add, uint64_t *ret_usec,
                       char **ret_writer) {
        char at[16], writer[256];
        uint64_t usec;
        int v, n = with_at ? sscanf(value, "%d %15s %" SCNu64 " %255s", &v, at, &usec, writer)
                           : sscanf(value, "%d %" SCNu64 " %255s", &v, &usec, writer);

        if (n != (with_at ? 4 : 3) || (v != 0 && v != 1))
                return -EBADMSG;
        if (with_at) {
                if (!streq(at, "add") && !streq(at, "later"))
                        return -EBADMSG;
                *ret_at_add = streq(at, "add");
        }
        *ret_value = v;
        *ret_usec = usec;
        *ret_writer = strdup(writer);
        return *ret_writer ? 0 : -ENOMEM;
}

static int history_append(FlagHistory *h, int value, uint64_t usec, char *writer) {
        if (h->n_changes >= HISTORY_MAX_CHANGES) {
                free(h->changes[0].writer);
                memmove(h->changes, h->changes + 1, sizeof(FlagChange) * --h->n_changes);
                h->dropped++;
        }
        FlagChange *c = realloc(h->changes, sizeof(FlagChange) * (h->n_changes + 1));
        if (!c) {
                free(writer);
                return -ENOMEM;
        }
        h->changes = c;
        c[h->n_changes++] = (FlagChange){ .value = value, .usec = usec, .writer = writer };
        return 0;
}

/* Stores one "key=value" line. Returns 0, -EBADMSG or -ENOMEM. */
static int parse_line(FlagHistory *h, const char *key, const char *value, bool *seen_first) {
        long long n;

        if (streq(key, "version"))
                return streq(value, "1") ? 0 : -EBADMSG;
        if (streq(key, "disk")) {
                if (!device_name_is_valid(value))
                        return -EBADMSG;
                free(h->disk);
                return (h->disk = strdup(value)) ? 0 : -ENOMEM;
        }
        if (streq(key, "diskseq") || streq(key, "dropped")) {
                if (parse_int_range(value, 0, INT64_MAX, &n) < 0)
                        return -EBADMSG;
                *(streq(key, "diskseq") ? &h->diskseq : &h->dropped) = (uint64_t) n;
                return 0;
        }
        if (streq(key, "devnum"))
                return parse_devnum(value, &h->devnum) < 0 ? -EBADMSG : 0;
        if (streq(key, "first")) {
                free(h->first_by);
                h->first_by = NULL;
                *seen_first = true;
                return parse_event(value, true, &h->first, &h->first_at_add, &h->first_usec, &h->first_by);
        }
        if (streq(key, "change")) {
                int v;
                uint64_t usec;
                char *writer = NULL;
                int r = parse_event(value, false, &v, NULL, &usec, &writer);
                return r < 0 ? r : history_append(h, v, usec, writer);
        }
        return 0; /* written by a newer version */
}

int history_parse(const char *text, FlagHistory *ret) {
        _cleanup_(history_done) FlagHistory h = {};
        bool seen_first = false;
        int r = 0;

        for (const char *l = text; r == 0 && *l;) {
                size_t n = strcspn(l, "\n");
                _cleanup_free_ char *line = strndup(l, n);
                char *eq;

                if (!line)
                        return -ENOMEM;
                if (n > 0) {
                        eq = strchr(line, '=');
                        if (!eq)
                                return -EBADMSG;
                        *eq = '\0';
                        r = parse_line(&h, line, eq + 1, &seen_first);
                }
                l += n + (l[n] == '\n');
        }
        if (r < 0)
                return r;
        if (!h.disk || h.diskseq == 0 || !seen_first)
                return -EBADMSG;
        *ret = h;
        h = (FlagHistory){};
        return 0;
}

static char *history_path(const char *runtime_dir, const char *disk) {
        if (!device_name_is_valid(disk))
                return NULL;
        return strdup_printf("%s/history/%s", runtime_dir, disk);
}

/* Takes the lock of the history directory (created when missing), waiting for it. Returns the
 * descriptor or -errno. */
static int history_lock(const char *runtime_dir) {
        _cleanup_free_ char *dir = strdup_printf("%s/history", runtime_dir),
                            *lock = strdup_printf("%s/history/.lock", runtime_dir);
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!dir || !lock)
                return -ENOMEM;
        r = mkdir_p(dir, 0755);
        if (r < 0)
                return r;
        fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        while (flock(fd, LOCK_EX) < 0)
                if (errno != EINTR)
                        return -errno;
        return TAKE_FD(fd);
}

/* Reads the history file of disk whatever its diskseq. Returns 0, -ENOENT, or -errno. */
static int history_read(const char *runtime_dir, const char *disk, FlagHistory *ret) {
        _cleanup_free_ char *path = history_path(runtime_dir, disk), *text = NULL;
        int r;

        if (!path)
                return -EINVAL;
        r = read_full_file(path, 64 * 1024, &text, NULL);
        if (r < 0)
                return r;
        r = history_parse(text, ret);
        if (r >= 0 && !streq(ret->disk, disk)) {
                history_done(ret);
                return -EBADMSG;
        }
        return r;
}

static int history_save(const char *runtime_dir, const FlagHistory *h) {
        _cleanup_free_ char *path = history_path(runtime_dir, h->disk), *text = history_format(h);

        if (!path || !text)
                return path ? -ENOMEM : -EINVAL;
        return write_file_atomic(path, text, strlen(text), 0644);
}

int history_load(const char *runtime_dir, const char *disk, uint64_t diskseq, FlagHistory *ret) {
        FlagHistory h = {};
        int r;

        if (diskseq == 0)
                return -ENOENT; /* a name alone would be the next disk's too */
        r = history_read(runtime_dir, disk, &h);
        if (r == -EBADMSG)
                return -ENOENT; /* unreadable: recorded again at this sight */
        if (r < 0)
                return r;
        if (h.diskseq != diskseq) {
                history_done(&h);
                return -ENOENT; /* an earlier disk of the name */
        }
        *ret = h;
        return 0;
}

/* The history of disk with diskseq under the lock: loaded, or started (first sight) from value
 * and at_add. Returns 1 when started, 0 when loaded, or -errno. */
static int history_get(const char *runtime_dir, const char *disk, uint64_t diskseq, dev_t devnum, int value,
                       bool at_add, const char *writer, FlagHistory *ret) {
        int r = history_load(runtime_dir, disk, diskseq, ret);

        if (r != -ENOENT)
                return r < 0 ? r : 0;
        *ret = (FlagHistory){
                .disk = strdup(disk),
                .diskseq = diskseq,
                .devnum = devnum,
                .first = value,
                .first_at_add = at_add,
                .first_usec = now_usec_realtime(),
                .first_by = writer_dup(writer),
        };
        if (!ret->disk || !ret->first_by) {
                history_done(ret);
                return -ENOMEM;
        }
        return 1;
}

int history_note_first(const char *runtime_dir, const char *disk, uint64_t diskseq, dev_t devnum, int value,
                       bool at_add, const char *writer) {
        _cleanup_(history_done) FlagHistory h = {};
        _cleanup_close_ int lock = -EBADF;
        int r;

        if (diskseq == 0 || (value != 0 && value != 1))
                return -EINVAL;
        lock = history_lock(runtime_dir);
        if (lock < 0)
                return lock;
        r = history_get(runtime_dir, disk, diskseq, devnum, value, at_add, writer, &h);
        if (r < 0)
                return r;
        if (r == 0) {
                /* Seen first by another, but nothing changed it since: at its add it is the kernel's. */
                if (!at_add || h.first_at_add || h.n_changes > 0 || h.first != value)
                        return 0;
                h.first_at_add = true;
        }
        r = history_save(runtime_dir, &h);
        return r < 0 ? r : 1;
}

int history_note_change(const char *runtime_dir, const char *disk, uint64_t diskseq, dev_t devnum, int prior,
                        int value, const char *writer) {
        _cleanup_(history_done) FlagHistory h = {};
        _cleanup_close_ int lock = -EBADF;
        int r;

        if (diskseq == 0 || (value != 0 && value != 1) || (prior != 0 && prior != 1))
                return -EINVAL;
        lock = history_lock(runtime_dir);
        if (lock < 0)
                return lock;
        r = history_get(runtime_dir, disk, diskseq, devnum, prior, false, writer, &h);
        if (r < 0)
                return r;
        char *w = writer_dup(writer);
        if (!w)
                return -ENOMEM;
        r = history_append(&h, value, now_usec_realtime(), w);
        if (r < 0)
                return r;
        return history_save(runtime_dir, &h);
}

int history_forget(const char *runtime_dir, const char *disk, uint64_t diskseq) {
        _cleanup_(history_done) FlagHistory h = {};
        _cleanup_free_ char *path = history_path(runtime_dir, disk);
        _cleanup_close_ int lock = -EBADF;
        int r;

        if (!path)
                return -EINVAL;
        lock = history_lock(runtime_dir);
        if (lock < 0)
                return lock;
        r = history_read(runtime_dir, disk, &h);
        if (r == -ENOENT)
                return 0;
        if (r >= 0 && h.diskseq != diskseq)
                return 0; /* the history of the disk that has the name now */
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}
