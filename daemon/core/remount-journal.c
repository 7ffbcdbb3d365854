/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal of the unmount + mount cycles in flight (remount-journal.h): its format, and its
 * files under RUNTIME_DIR/cycles/, saved, listed, locked, set aside and removed. */
#include <fcntl.h>
#include <inttypes.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "remount-journal.h"
#include "util.h"

static const char *const remount_stage_table[_REMOUNT_STAGE_MAX] = {
        [REMOUNT_STAGE_PREPARED] = "prepared",         [REMOUNT_STAGE_UNMOUNTING] = "unmounting",
        [REMOUNT_STAGE_MOUNTING_NEW] = "mounting-new", [REMOUNT_STAGE_MOUNTING_OLD] = "mounting-old",
        [REMOUNT_STAGE_MOUNTED] = "mounted",           [REMOUNT_STAGE_MOUNTED_OLD] = "mounted-old",
};

DEFINE_STRING_TABLE_LOOKUP(remount_stage, RemountStage);

void remount_journal_done(RemountJournal *j) {
        free(j->disk);
        free(j->fs_uuid);
        free(j->unit);
        remount_plan_done(&j->plan);
        *j = (RemountJournal){};
}

bool remount_journal_fell_back(const RemountJournal *j) {
        return j->stage == REMOUNT_STAGE_MOUNTING_OLD || j->stage == REMOUNT_STAGE_MOUNTED_OLD;
}

int remount_journal_mount_flag(const RemountJournal *j) {
        return remount_journal_fell_back(j) ? j->old_flag : j->new_flag;
}

/* Writes "key=value\n" with value escaped as mountinfo does. */
static void put(FILE *f, const char *key, const char *value) {
        fprintf(f, "%s=", key);
        for (const char *c = value ?: ""; *c; c++)
                if (*c == '\\' || *c == '\n' || *c == ' ' || *c == '\t')
                        fprintf(f, "\\%03o", (unsigned char) *c);
                else
                        fputc(*c, f);
        fputc('\n', f);
}

char *remount_journal_format(const RemountJournal *j) {
        const RemountPlan *p = &j->plan;
        char *buf = NULL, a[32], b[32];
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        fprintf(f, "version=1\n");
        put(f, "target", p->target);
        put(f, "disk", j->disk);
        fprintf(f, "diskseq=%" PRIu64 "\n", j->diskseq);
        put(f, "fs_uuid", j->fs_uuid);
        put(f, "source", p->source);
        fprintf(f, "source_devnum=%s\ndevnum=%s\n", format_devnum(p->source_devnum, a),
                format_devnum(p->devnum, b));
        put(f, "fstype", p->fstype);
        put(f, "root", p->root);
        put(f, "vfs_options", p->vfs_options);
        put(f, "fs_options", p->fs_options);
        fprintf(f, "mount_id=%d\nparent_id=%d\npropagation=%lu\npeer_group=%d\n", p->id, p->parent_id,
                p->propagation, p->peer_group);
        fprintf(f, "parent_dev=%s\nparent_ino=%" PRIu64 "\nsb_ino=%" PRIu64 "\n",
                format_devnum(j->parent_dev, a), (uint64_t) j->parent_ino, j->sb_ino);
        put(f, "unit", j->unit);
        fprintf(f, "unit_file=%d\nold_flag=%d\nnew_flag=%d\nstage=%s\n", j->unit_file, j->old_flag,
                j->new_flag, remount_stage_to_string(j->stage) ?: "prepared");
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* Parses an int within [min,max] into *dst. Returns 0 or -EBADMSG. */
static int parse_int_field(const char *value, long long min, long long max, int *dst) {
        long long v;

        if (parse_int_range(value, min, max, &v) < 0)
                return -EBADMSG;
        *dst = (int) v;
        return 0;
}

/* Stores one field. Returns 0, -EBADMSG or -ENOMEM. */
static int parse_field(RemountJournal *j, const char *key, const char *value) {
        RemountPlan *p = &j->plan;
        struct {
                const char *key;
                char **dst;
        } strings[] = {
                { "target", &p->target },         { "disk", &j->disk }, { "source", &p->source },
                { "fstype", &p->fstype },         { "root", &p->root }, { "vfs_options", &p->vfs_options },
                { "fs_options", &p->fs_options }, { "unit", &j->unit }, { "fs_uuid", &j->fs_uuid },
        };
        for (size_t i = 0; i < ELEMENTSOF(strings); i++)
                if (streq(key, strings[i].key)) {
                        free(*strings[i].dst);
                        *strings[i].dst = remount_unescape(value, strlen(value));
                        return *strings[i].dst ? 0 : -ENOMEM;
                }
        if (streq(key, "version"))
                return streq(value, "1") ? 0 : -EBADMSG;
        if (streq(key, "source_devnum"))
                return parse_devnum(value, &p->source_devnum) < 0 ? -EBADMSG : 0;
        if (streq(key, "devnum"))
                return parse_devnum(value, &p->devnum) < 0 ? -EBADMSG : 0;
        if (streq(key, "parent_dev"))
                return parse_devnum(value, &j->parent_dev) < 0 ? -EBADMSG : 0;
        if (streq(key, "stage"))
                return (j->stage = remount_stage_from_string(value)) < 0 ? -EBADMSG : 0;
        if (streq(key, "parent_ino") || streq(key, "sb_ino") || streq(key, "diskseq")) {
                char *end;
                errno = 0;
                unsigned long long v = strtoull(value, &end, 10);
                if (errno != 0 || end == value || *end || value[0] == '-')
                        return -EBADMSG;
                if (streq(key, "sb_ino"))
                        j->sb_ino = v;
                else if (streq(key, "diskseq")) {
                        j->diskseq = v;
                        j->identified = true;
                } else
                        j->parent_ino = (ino_t) v;
                return 0;
        }
        if (streq(key, "mount_id"))
                return parse_int_field(value, 1, INT32_MAX, &p->id);
        if (streq(key, "parent_id"))
                return parse_int_field(value, 0, INT32_MAX, &p->parent_id);
        if (streq(key, "peer_group"))
                return parse_int_field(value, 0, INT32_MAX, &p->peer_group);
        if (streq(key, "old_flag"))
                return parse_int_field(value, 0, 1, &j->old_flag);
        if (streq(key, "new_flag"))
                return parse_int_field(value, 0, 1, &j->new_flag);
        if (streq(key, "propagation") || streq(key, "unit_file")) {
                int v, r = parse_int_field(value, 0, INT32_MAX, &v);
                if (r < 0)
                        return r;
                if (streq(key, "unit_file"))
                        j->unit_file = v != 0;
                else
                        p->propagation = (unsigned long) v;
                return 0;
        }
        return 0; /* unknown keys: written by a newer version, ignored */
}

int remount_journal_parse(const char *text, RemountJournal *ret, char **ret_bad) {
        RemountJournal j = { .old_flag = -1, .new_flag = -1, .stage = _REMOUNT_STAGE_INVALID };
        int r = 0;

        if (ret_bad)
                *ret_bad = NULL;
        for (const char *l = text; r == 0 && l && *l;) {
                size_t n = strcspn(l, "\n");
                _cleanup_free_ char *line = strndup(l, n);
                char *eq;

                if (!line)
                        r = -ENOMEM;
                else if (n > 0 && !(eq = strchr(line, '=')))
                        r = -EBADMSG;
                else if (n > 0) {
                        *eq = '\0';
                        r = parse_field(&j, line, eq + 1);
                        *eq = '=';
                }
                if (r == -EBADMSG && ret_bad)
                        *ret_bad = TAKE_PTR(line);
                l += n + (l[n] == '\n');
        }
        if (r == 0 && (isempty(j.plan.target) || j.plan.target[0] != '/' || isempty(j.disk) ||
                       isempty(j.plan.fstype) || !j.plan.source || j.plan.id <= 0 ||
                       j.plan.source_devnum == 0 || j.old_flag < 0 || j.new_flag < 0 || j.stage < 0 ||
                       (j.stage > REMOUNT_STAGE_PREPARED && j.parent_ino == 0) || !j.plan.vfs_options ||
                       !j.plan.fs_options || !j.plan.root)) {
                r = -EBADMSG;
                if (ret_bad)
                        *ret_bad = strdup("a required field is missing");
        }
        if (r < 0) {
                remount_journal_done(&j);
                return r;
        }
        if (isempty(j.unit))
                j.unit = mfree(j.unit);
        if (isempty(j.fs_uuid))
                j.fs_uuid = mfree(j.fs_uuid);
        *ret = j;
        return 0;
}

char *remount_journal_path(const char *runtime_dir, const char *target) {
        _cleanup_free_ char *name = NULL;

        if (remount_unit_name_from_path(target, &name) < 0)
                return NULL;
        return strdup_printf("%s/cycles/%s", runtime_dir, name);
}

int remount_journal_save(const char *path, const RemountJournal *j) {
        _cleanup_free_ char *text = remount_journal_format(j), *dir = strdup(path);
        char *slash;
        int r;

        if (!text || !dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = '\0';
                r = mkdir_p(dir, 0755);
                if (r < 0)
                        return r;
        }
        return write_file_atomic(path, text, strlen(text), 0644);
}

int remount_journal_load(const char *path, RemountJournal *ret) {
        _cleanup_free_ char *text = NULL;
        int r = read_full_file(path, 1 << 16, &text, NULL);

        if (r < 0)
                return r;
        return remount_journal_parse(text, ret, NULL);
}

int remount_journal_set_aside(const char *path, const char *runtime_dir, char **ret_path) {
        _cleanup_free_ char *dir = strdup_printf("%s/cycles-refused", runtime_dir), *to = NULL,
                            *lock = strdup_printf("%s.lock", path);
        const char *name = strrchr(path, '/');
        int r;

        if (!dir || !lock)
                return -ENOMEM;
        r = mkdir_p(dir, 0755);
        if (r < 0)
                return r;
        to = strdup_printf("%s/%s.%" PRIu64, dir, name ? name + 1 : path,
                           (uint64_t) (now_usec_realtime() / USEC_PER_SEC));
        if (!to)
                return -ENOMEM;
        if (rename(path, to) < 0)
                return -errno;
        (void) unlink(lock);
        *ret_path = TAKE_PTR(to);
        return 0;
}

int remount_fs_uuid(const char *udev_data_dir, dev_t devnum, char **ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;

        *ret = NULL;
        if (isempty(udev_data_dir) || devnum == 0)
                return 0;
        path = strdup_printf("%s/b%u:%u", udev_data_dir, major(devnum), minor(devnum));
        if (!path)
                return -ENOMEM;
        int r = read_full_file(path, 1 << 16, &text, NULL);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;
        for (const char *l = text; *l;) {
                size_t n = strcspn(l, "\n");
                if (n > 13 && strneq(l, "E:ID_FS_UUID=", 13)) {
                        *ret = strndup(l + 13, n - 13);
                        return *ret ? 1 : -ENOMEM;
                }
                l += n + (l[n] == '\n');
        }
        return 0;
}

int remount_journal_remove(const char *path) {
        _cleanup_free_ char *lock = strdup_printf("%s.lock", path);

        if (!lock)
                return -ENOMEM;
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        (void) unlink(lock);
        return 0;
}

int remount_journal_list(const char *runtime_dir, char ***ret) {
        _cleanup_free_ char *dir = strdup_printf("%s/cycles", runtime_dir);
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_strv_free_ char **l = NULL;
        struct dirent *de;

        *ret = NULL;
        if (!dir)
                return -ENOMEM;
        (void) unlink_stale_temp_files(dir);
        d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((de = readdir(d))) {
                size_t n = strlen(de->d_name);
                if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp.") ||
                    (n > 5 && streq(de->d_name + n - 5, ".lock")))
                        continue;
                if (strv_extendf(&l, "%s/%s", dir, de->d_name) < 0)
                        return -ENOMEM;
        }
        strv_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

int remount_journal_lock(const char *path) {
        _cleanup_free_ char *lock = strdup_printf("%s.lock", path), *dir = strdup(path);
        _cleanup_close_ int fd = -EBADF;
        char *slash;

        if (!lock || !dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = '\0';
                int r = mkdir_p(dir, 0755);
                if (r < 0)
                        return r;
        }
        fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
        return TAKE_FD(fd);
}
