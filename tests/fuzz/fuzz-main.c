/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Replays fuzz inputs without libFuzzer: every file named on the command line, and every
 * file in every directory named, through LLVMFuzzerTestOneInput(). Used by the regular
 * builds to run the committed corpora as regression tests. */

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path) {
        FILE *f = fopen(path, "re");
        uint8_t *buf = NULL;
        size_t size = 0, allocated = 0;

        if (!f) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -1;
        }
        for (;;) {
                if (allocated - size < 65536) {
                        allocated = allocated ? allocated * 2 : 65536;
                        buf = realloc(buf, allocated);
                        if (!buf)
                                abort();
                }
                size_t k = fread(buf + size, 1, allocated - size, f);
                size += k;
                if (k == 0)
                        break;
        }
        fclose(f);
        /* A copy of exactly size bytes, so that ASan sees reads past the end. */
        uint8_t *exact = malloc(size ? size : 1);
        if (!exact)
                abort();
        memcpy(exact, buf, size);
        free(buf);
        LLVMFuzzerTestOneInput(exact, size);
        free(exact);
        return 0;
}

static int cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int main(int argc, char **argv) {
        unsigned n = 0, failed = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        failed += run_file(argv[i]) < 0;
                        n++;
                        continue;
                }
                DIR *d = opendir(argv[i]);
                char **names = NULL;
                size_t k = 0;
                if (!d) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return 1;
                }
                for (struct dirent *de; (de = readdir(d));) {
                        if (de->d_name[0] == '.')
                                continue;
                        names = realloc(names, sizeof(char *) * (k + 1));
                        if (!names || asprintf(&names[k], "%s/%s", argv[i], de->d_name) < 0)
                                abort();
                        k++;
                }
                closedir(d);
                qsort(names, k, sizeof(char *), cmp);
                for (size_t j = 0; j < k; j++) {
                        failed += run_file(names[j]) < 0;
                        n++;
                        free(names[j]);
                }
                free(names);
        }
        printf("%u inputs replayed, %u unreadable\n", n, failed);
        return failed > 0 || n == 0;
}
