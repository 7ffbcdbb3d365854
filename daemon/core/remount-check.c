/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The safety checks of the unmount + mount cycle that need only text: the plan read from the
 * mount table, the refusals, and the options to mount with again (remount-check.h). */
#include <ctype.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "remount-check.h"
#include "util.h"

static const char *const protected_targets[] = { "/", "/usr", "/boot" };

void remount_plan_done(RemountPlan *p) {
        free(p->root);
        free(p->source);
        free(p->target);
        free(p->fstype);
        free(p->vfs_options);
        free(p->fs_options);
        *p = (RemountPlan){};
}

static int strdup_field(char **dst, const char *s) {
        *dst = strdup(s ?: "");
        return *dst ? 0 : -ENOMEM;
}

int remount_optional_field(const char *optional_fields, const char *tag) {
        size_t n = strlen(tag);

        for (const char *p = optional_fields; p && *p;) {
                p += strspn(p, " ");
                if (strneq(p, tag, n) && p[n] == ':')
                        return atoi(p + n + 1);
                p += strcspn(p, " ");
        }
        return 0;
}

unsigned long remount_propagation_from_fields(const char *optional_fields) {
        unsigned long flags = 0;

        /* Not mnt_fs_get_propagation(): it says MS_PRIVATE for a slave that is not shared. */
        if (remount_optional_field(optional_fields, "shared") > 0)
                flags |= MS_SHARED;
        if (remount_optional_field(optional_fields, "master") > 0)
                flags |= MS_SLAVE;
        for (const char *p = optional_fields; p && *p;) {
                p += strspn(p, " ");
                size_t n = strcspn(p, " ");
                if (n == 10 && strneq(p, "unbindable", 10))
                        flags |= MS_UNBINDABLE;
                p += n;
        }
        return flags;
}

int remount_plan_from_table(struct libmnt_table *t, int id, dev_t source_devnum, RemountPlan *ret) {
        struct libmnt_iter *iter = mnt_new_iter(MNT_ITER_FORWARD);
        struct libmnt_fs *fs, *found = NULL;
        RemountPlan p = {};
        int r;

        if (!iter)
                return -ENOMEM;
        while (mnt_table_next_fs(t, iter, &fs) == 0)
                if (mnt_fs_get_id(fs) == id) {
                        found = fs;
                        break;
                }
        mnt_free_iter(iter);
        if (!found)
                return -ENOENT;

        p.id = id;
        p.parent_id = mnt_fs_get_parent_id(found);
        p.devnum = mnt_fs_get_devno(found);
        p.source_devnum = source_devnum ?: p.devnum;
        p.propagation = remount_propagation_from_fields(mnt_fs_get_optional_fields(found));
        p.peer_group = remount_optional_field(mnt_fs_get_optional_fields(found), "shared");
        if ((r = strdup_field(&p.root, mnt_fs_get_root(found))) < 0 ||
            (r = strdup_field(&p.source, mnt_fs_get_source(found))) < 0 ||
            (r = strdup_field(&p.target, mnt_fs_get_target(found))) < 0 ||
            (r = strdup_field(&p.fstype, mnt_fs_get_fstype(found))) < 0 ||
            (r = strdup_field(&p.vfs_options, mnt_fs_get_vfs_options(found))) < 0 ||
            (r = strdup_field(&p.fs_options, mnt_fs_get_fs_options(found))) < 0) {
                remount_plan_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

static int refuse(char **ret_reason, char *reason) {
        *ret_reason = reason;
        return reason ? 1 : -ENOMEM;
}

int remount_check_target(const char *target, char *const *never_remount, char **ret_reason) {
        for (size_t i = 0; i < ELEMENTSOF(protected_targets); i++)
                if (streq(target, protected_targets[i]))
                        return refuse(ret_reason, strdup_printf("%s is never unmounted (%s)", target,
                                                                streq(target, "/") ? "the root filesystem"
                                                                                   : "a system filesystem"));
        STRV_FOREACH (p, never_remount)
                if (streq(target, *p))
                        return refuse(ret_reason, strdup_printf("%s is listed in NeverRemount=", target));
        return 0;
}

int remount_check_dir(const char *dir, uid_t uid, mode_t mode, const char *child, uid_t child_uid,
                      char **ret_reason) {
        if (!S_ISDIR(mode))
                return refuse(ret_reason, strdup_printf("%s is not a directory", dir));
        if (uid != 0)
                return refuse(
                        ret_reason,
                        strdup_printf("%s belongs to UID %u, who could replace %s by a symbolic link while "
                                      "it is unmounted",
                                      dir, (unsigned) uid, child));
        if (!(mode & (S_IWGRP | S_IWOTH)))
                return 0;
        if (!(mode & S_ISVTX))
                return refuse(ret_reason,
                              strdup_printf("%s is writable by %s (mode %04o): %s could be replaced by a "
                                            "symbolic link while it is unmounted",
                                            dir, mode & S_IWOTH ? "every user" : "its group",
                                            (unsigned) (mode & 07777), child));
        if (child_uid != 0)
                return refuse(
                        ret_reason,
                        child_uid == (uid_t) -1
                                ? strdup_printf("%s is writable by others (sticky, mode %04o) and the owner "
                                                "of %s cannot be seen while it is mounted: its owner could "
                                                "rename it while it is unmounted",
                                                dir, (unsigned) (mode & 07777), child)
                                : strdup_printf(
                                          "%s is writable by others (sticky, mode %04o) and %s belongs "
                                          "to UID %u, who could rename it",
                                          dir, (unsigned) (mode & 07777), child, (unsigned) child_uid));
        return 0;
}

int remount_check_fstype(const char *fstype, char **ret_reason) {
        if (startswith(fstype, "fuse"))
                return refuse(
                        ret_reason,
                        strdup_printf("%s is served by a user-space process that an unmount stops", fstype));
        return 0;
}

int remount_check_table(struct libmnt_table *t, const RemountPlan *p, char **ret_reason) {
        struct libmnt_iter *iter = mnt_new_iter(MNT_ITER_FORWARD);
        struct libmnt_fs *fs;
        int r = 0;

        if (!iter)
                return -ENOMEM;
        while (r == 0 && mnt_table_next_fs(t, iter, &fs) == 0) {
                const char *target = mnt_fs_get_target(fs) ?: "?", *root = mnt_fs_get_root(fs) ?: "/";

                if (mnt_fs_get_id(fs) == p->id)
                        continue;
                if (mnt_fs_get_devno(fs) == p->devnum) {
                        /* Any other mount of the superblock, whatever its root: it keeps the
                         * superblock, so the new mount would get the old one back. */
                        if (streq(root, p->root))
                                r = refuse(ret_reason,
                                           strdup_printf(
                                                   "the filesystem is also mounted on %s (a bind mount or "
                                                   "a second mount of it)",
                                                   target));
                        else if (streq(p->root, "/"))
                                r = refuse(ret_reason,
                                           strdup_printf("its directory %s is bind-mounted on %s", root,
                                                         target));
                        else if (streq(root, "/"))
                                r = refuse(ret_reason,
                                           strdup_printf("the filesystem is also mounted on %s", target));
                        else
                                r = refuse(ret_reason,
                                           strdup_printf(
                                                   "the filesystem is also mounted on %s (its directory %s)",
                                                   target, root));
                } else if (mnt_fs_get_parent_id(fs) == p->id)
                        r = refuse(ret_reason,
                                   streq(target, p->target)
                                           ? strdup_printf("another filesystem is mounted over it on %s",
                                                           target)
                                           : strdup_printf("it has a submount on %s", target));
        }
        mnt_free_iter(iter);
        return r;
}

char *remount_unescape(const char *s, size_t n) {
        char *out = malloc(n + 1), *o = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' && isdigit(s[i + 2]) &&
                    isdigit(s[i + 3])) {
                        *o++ = (char) ((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
                        i += 3;
                } else
                        *o++ = s[i];
        }
        *o = '\0';
        return out;
}

/* True when path is target or below it. */
static bool path_below(const char *path, const char *target) {
        size_t n = strlen(target);

        if (streq(target, "/"))
                return path[0] == '/';
        return strneq(path, target, n) && (path[n] == '\0' || path[n] == '/');
}

int remount_check_swaps(const char *swaps, const char *target, char **ret_reason) {
        const char *line = swaps;

        /* "Filename  Type  Size  Used  Priority", then one line per swap area. */
        while (line && *line) {
                const char *end = strchrnul(line, '\n');
                size_t n = strcspn(line, " \t\n");
                const char *type = line + n;

                type += strspn(type, " \t");
                if (n > 0 && line[0] == '/' && strneq(type, "file", 4)) {
                        _cleanup_free_ char *path = remount_unescape(line, n);
                        if (!path)
                                return -ENOMEM;
                        if (path_below(path, target))
                                return refuse(ret_reason,
                                              strdup_printf("it holds the active swap file %s", path));
                }
                line = *end ? end + 1 : NULL;
        }
        return 0;
}

int remount_check_loop_backing(const char *loop, const char *backing_file, const char *target,
                               char **ret_reason) {
        if (isempty(backing_file) || !path_below(backing_file, target))
                return 0;
        return refuse(ret_reason,
                      strdup_printf("it holds %s, the backing file of /dev/%s", backing_file, loop));
}

int remount_check_loop_autoclear(const char *source, int autoclear, char **ret_reason) {
        if (autoclear != 1)
                return 0;
        return refuse(
                ret_reason,
                strdup_printf("%s is a loop device set up to detach itself at unmount (autoclear)", source));
}

/* Appends the options of optstr to *buf, skipping rw/ro when skip_rw. */
static int append_options(FILE *f, bool *first, const char *optstr, bool skip_rw) {
        char *name, *value;
        size_t namesz, valuesz;
        char *p = (char *) optstr;

        while (p && mnt_optstr_next_option(&p, &name, &namesz, &value, &valuesz) == 0) {
                if (skip_rw &&
                    ((namesz == 2 && strneq(name, "rw", 2)) || (namesz == 2 && strneq(name, "ro", 2))))
                        continue;
                fprintf(f, "%s%.*s", *first ? "" : ",", (int) namesz, name);
                if (value)
                        fprintf(f, "=%.*s", (int) valuesz, value);
                *first = false;
        }
        return 0;
}

char *remount_plan_options(const RemountPlan *p) {
        char *buf = NULL;
        size_t size = 0;
        bool first = true;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        append_options(f, &first, p->vfs_options, false);
        append_options(f, &first, p->fs_options, true);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* The options of optstr as a sorted list of "name" or "name=value". */
static char **options_list(const char *optstr) {
        char **l = NULL, *name, *value;
        size_t namesz, valuesz;
        char *p = (char *) optstr;

        while (p && mnt_optstr_next_option(&p, &name, &namesz, &value, &valuesz) == 0) {
                int r = value ? strv_extendf(&l, "%.*s=%.*s", (int) namesz, name, (int) valuesz, value)
                              : strv_extendf(&l, "%.*s", (int) namesz, name);
                if (r < 0)
                        return strv_free(l);
        }
        strv_sort(l);
        return l;
}

bool remount_options_equal(const char *a, const char *b) {
        _cleanup_strv_free_ char **x = options_list(a), **y = options_list(b);
        size_t n = strv_length(x);

        if (n != strv_length(y))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!streq(x[i], y[i]))
                        return false;
        return true;
}

void remount_unit_file_done(RemountUnitFile *u) {
        free(u->what);
        free(u->options);
        free(u->type);
        *u = (RemountUnitFile){};
}

/* Sets *dst to value with "%%" undone; 1 (with a reason) for another specifier. */
static int unit_value(char **dst, const char *key, const char *value, char **ret_reason) {
        _cleanup_free_ char *v = strdup(value);
        char *w;

        if (!v)
                return -ENOMEM;
        w = v;
        for (const char *c = value; *c; c++) {
                if (*c == '%' && c[1] != '%')
                        return refuse(ret_reason, strdup_printf("its %s=%s uses a specifier (%%%c)", key,
                                                                value, c[1] ?: ' '));
                *w++ = *c;
                c += *c == '%';
        }
        *w = '\0';
        free(*dst);
        *dst = isempty(v) ? NULL : TAKE_PTR(v);
        return 0;
}

int remount_unit_file_parse(const char *text, RemountUnitFile *u, char **ret_reason) {
        bool in_mount = false;
        int r = 0;

        *ret_reason = NULL;
        for (const char *l = text; r == 0 && l && *l;) {
                _cleanup_free_ char *line = NULL;
                size_t size = 0;
                FILE *f = open_memstream(&line, &size);

                if (!f)
                        return -ENOMEM;
                /* A backslash at the end of a line joins the next one, as a space. */
                for (;;) {
                        size_t n = strcspn(l, "\n");
                        bool more = n > 0 && l[n - 1] == '\\' && l[n] == '\n';
                        fprintf(f, "%.*s%s", (int) (more ? n - 1 : n), l, more ? " " : "");
                        l += n + (l[n] == '\n');
                        if (!more || !*l)
                                break;
                }
                if (fclose(f) != 0)
                        return -ENOMEM;
                char *s = strstrip(line), *eq;
                if (*s == '[') {
                        in_mount = streq(s, "[Mount]");
                        continue;
                }
                if (!in_mount || *s == '#' || *s == ';' || !(eq = strchr(s, '=')))
                        continue;
                *eq = '\0';
                const char *key = strstrip(s), *value = strstrip(eq + 1);
                if (streq(key, "What"))
                        r = unit_value(&u->what, key, value, ret_reason);
                else if (streq(key, "Options"))
                        r = unit_value(&u->options, key, value, ret_reason);
                else if (streq(key, "Type"))
                        r = unit_value(&u->type, key, value, ret_reason);
        }
        return r;
}

/* The flags of the options in optstr that are mount(2) flags (MNT_LINUX_MAP). */
static unsigned long option_flags(const char *optstr) {
        unsigned long flags = 0;
        if (optstr)
                (void) mnt_optstr_get_flags(optstr, &flags, mnt_get_builtin_optmap(MNT_LINUX_MAP));
        return flags;
}

/* The atime mode the kernel gives a mount with these flags: relatime unless told otherwise. */
static const char *atime_mode(unsigned long flags) {
        return flags & MS_STRICTATIME ? "strictatime" : flags & MS_NOATIME ? "noatime" : "relatime";
}

int remount_check_unit_file(const RemountPlan *p, const char *unit, const RemountUnitFile *u,
                            dev_t what_devnum, char **ret_reason) {
        static const struct {
                unsigned long flag;
                const char *name;
                bool superblock; /* shown in mountinfo's superblock options */
        } flags[] = {
                { MS_RDONLY, "ro", false },
                { MS_NOSUID, "nosuid", false },
                { MS_NODEV, "nodev", false },
                { MS_NOEXEC, "noexec", false },
                { MS_NODIRATIME, "nodiratime", false },
                { MS_NOSYMFOLLOW, "nosymfollow", false },
                { MS_SYNCHRONOUS, "sync", true },
                { MS_DIRSYNC, "dirsync", true },
                { MS_LAZYTIME, "lazytime", true },
                { MS_MANDLOCK, "mand", true },
        };
        _cleanup_free_ char *user = NULL, *vfs = NULL, *fs = NULL;
        char a[32], b[32];

        *ret_reason = NULL;
        if (!u->what || what_devnum != p->source_devnum)
                return refuse(
                        ret_reason,
                        strdup_printf(
                                "its unit %s would mount %s%s%s%s, not %s (%s) that is mounted there now",
                                unit, u->what ?: "nothing (it has no What=)", what_devnum ? " (" : "",
                                what_devnum ? format_devnum(what_devnum, a) : "", what_devnum ? ")" : "",
                                p->source, format_devnum(p->source_devnum, b)));
        if (u->type && !streq(u->type, "auto") && !streq(u->type, p->fstype))
                return refuse(ret_reason, strdup_printf("its unit %s would mount it as %s, it is %s", unit,
                                                        u->type, p->fstype));
        if (mnt_split_optstr(u->options ?: "", &user, &vfs, &fs, 0, 0) < 0)
                return -ENOMEM;
        unsigned long want = option_flags(vfs), mount_flags = option_flags(p->vfs_options),
                      sb_flags = option_flags(p->fs_options);
        for (size_t i = 0; i < ELEMENTSOF(flags); i++) {
                bool now = (flags[i].superblock ? sb_flags : mount_flags) & flags[i].flag;
                if (!!(want & flags[i].flag) != now)
                        return refuse(
                                ret_reason,
                                strdup_printf("its unit %s would mount it %s %s, it is mounted %s it now",
                                              unit, now ? "without" : "with", flags[i].name,
                                              now ? "with" : "without"));
        }
        if (!streq(atime_mode(want), atime_mode(mount_flags)))
                return refuse(ret_reason,
                              strdup_printf("its unit %s would mount it with %s, it is mounted with %s",
                                            unit, atime_mode(want), atime_mode(mount_flags)));
        _cleanup_strv_free_ char **given = options_list(fs), **shown = options_list(p->fs_options);
        STRV_FOREACH (o, given)
                if (!strv_contains(shown, *o))
                        return refuse(
                                ret_reason,
                                strdup_printf(
                                        "its unit %s would mount it with %s, which its filesystem does "
                                        "not show now (%s)",
                                        unit, *o, p->fs_options));
        return 0;
}

size_t remount_propagation_steps(unsigned long recorded, unsigned long now, unsigned long steps[static 3]) {
        const unsigned long mask = MS_SHARED | MS_SLAVE | MS_UNBINDABLE;
        size_t n = 0;

        recorded &= mask;
        now &= mask;
        if (recorded == now)
                return 0;
        if (recorded == 0)
                steps[n++] = MS_PRIVATE;
        else if (recorded & MS_UNBINDABLE)
                steps[n++] = MS_UNBINDABLE; /* implies private */
        else if (recorded & MS_SLAVE) {
                steps[n++] = MS_SLAVE; /* of the peer group it joined, if any; else private */
                if (recorded & MS_SHARED)
                        steps[n++] = MS_SHARED;
        } else {
                if (now & MS_SLAVE)
                        steps[n++] = MS_PRIVATE; /* drop the master first */
                steps[n++] = MS_SHARED;
        }
        return n;
}

int remount_path_split(const char *path, char ***ret) {
        _cleanup_strv_free_ char **parts = NULL;

        *ret = NULL;
        if (!path || path[0] != '/')
                return -EINVAL;
        /* No duplicate, leading or trailing slashes, no "." components. */
        for (const char *p = path; *p;) {
                p += strspn(p, "/");
                size_t n = strcspn(p, "/");
                if (n == 0)
                        break;
                if (n == 2 && strneq(p, "..", 2))
                        return -EINVAL;
                if (!(n == 1 && p[0] == '.') && strv_extendf(&parts, "%.*s", (int) n, p) < 0)
                        return -ENOMEM;
                p += n;
        }
        *ret = TAKE_PTR(parts);
        return 0;
}

int remount_unit_name_from_path(const char *path, char **ret) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        _cleanup_strv_free_ char **parts = NULL;
        int r = remount_path_split(path, &parts);
        if (r < 0)
                return r;
        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        if (!parts)
                fputc('-', f);
        for (size_t i = 0; parts && parts[i]; i++) {
                if (i > 0)
                        fputc('-', f);
                for (const char *c = parts[i]; *c; c++) {
                        bool first = i == 0 && c == parts[i];
                        if ((isalnum((unsigned char) *c) && isascii(*c)) || *c == ':' || *c == '_' ||
                            (*c == '.' && !first))
                                fputc(*c, f);
                        else
                                fprintf(f, "\\x%02x", (unsigned char) *c);
                }
        }
        fputs(".mount", f);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}
