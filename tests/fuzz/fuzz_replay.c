/* Replays fuzz inputs without libFuzzer: runs a target's LLVMFuzzerTestOneInput
   over every file of the given directories (and files), each in a child process
   so that one crash does not hide the next, and says which failed and how.
   Built with any compiler, in every tier; ctest runs it over
   tests/fuzz/corpus/<target>/, so the seeds and every crash ever found stay
   regression tests (under ASan and UBSan too in build-asan).
     fuzz_<target>_replay [--open LIST] [-v] PATH...
   LIST (tests/fuzz/open_bugs.txt) names the crash inputs of bugs not fixed yet,
   one per line with a note: they run and are reported, but do not fail the run
   (their output is shown with -v). A listed input that passes is reported so
   its line can go once the fix is in. TN_REPLAY_NO_FORK=1 runs in-process (for
   a debugger). */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz_target.h"

#define TIMEOUT_S 60 /* per input; libFuzzer's runs use -timeout=10 */

typedef struct list {
    char **items;
    size_t n, cap;
} list;

static void push(list *l, char *s) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->items = realloc(l->items, l->cap * sizeof *l->items);
        if (!l->items) exit(2);
    }
    l->items[l->n++] = s;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char *dup_str(const char *s) {
    char *d = malloc(strlen(s) + 1);
    if (!d) exit(2);
    return strcpy(d, s);
}

/* Files of path (a directory: its entries, sorted, dot files skipped). */
static void collect(const char *path, list *files) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        exit(2);
    }
    if (!S_ISDIR(st.st_mode)) {
        push(files, dup_str(path));
        return;
    }
    DIR *d = opendir(path);
    if (!d) exit(2);
    size_t first = files->n;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char *full = malloc(strlen(path) + strlen(e->d_name) + 2);
        if (!full) exit(2);
        sprintf(full, "%s/%s", path, e->d_name);
        push(files, full);
    }
    closedir(d);
    qsort(files->items + first, files->n - first, sizeof *files->items, by_name);
}

/* The note for base name of path in the open-bug list, or NULL. */
static const char *open_note(const list *open, const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    for (size_t i = 0; i < open->n; i++) {
        const char *line = open->items[i];
        if (strncmp(line, base, n) != 0 || (line[n] && line[n] != ' ' && line[n] != '\t')) continue;
        const char *note = line + n;
        while (*note == ' ' || *note == '\t') note++;
        return note;
    }
    return NULL;
}

static void read_open_list(const char *path, list *open) {
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        exit(2);
    }
    char line[1024];
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] && line[0] != '#') push(open, dup_str(line));
    }
    fclose(fp);
}

static int run_one(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return 2;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    /* Exactly len bytes, as libFuzzer passes them: a read past the end is an ASan report. */
    uint8_t *data = malloc(len > 0 ? (size_t)len : 1);
    if (!data || (len > 0 && fread(data, 1, (size_t)len, fp) != (size_t)len)) return 2;
    fclose(fp);
    LLVMFuzzerTestOneInput(data, (size_t)len);
    free(data);
    return 0;
}

static list files, open_list; /* static: still reachable when a child exits, so LeakSanitizer is quiet about them */

int main(int argc, char **argv) {
    int verbose = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--open") && i + 1 < argc) read_open_list(argv[++i], &open_list);
        else if (!strcmp(argv[i], "-v")) verbose = 1;
        else collect(argv[i], &files);
    }
    if (!files.n) {
        fprintf(stderr, "usage: %s [--open LIST] [-v] CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    const char *no_fork = getenv("TN_REPLAY_NO_FORK");
    if (no_fork && *no_fork == '1') {
        for (size_t i = 0; i < files.n; i++)
            if (run_one(files.items[i])) return 2;
        printf("replay: %zu inputs, in-process, all passed\n", files.n);
        return 0;
    }
    int passed = 0, failed = 0, still_open = 0, now_passing = 0;
    for (size_t i = 0; i < files.n; i++) {
        const char *path = files.items[i];
        const char *note = open_note(&open_list, path);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 2;
        }
        if (pid == 0) {
            if (note && !verbose && !freopen("/dev/null", "w", stderr)) _exit(2);
            alarm(TIMEOUT_S);
            exit(run_one(path));
        }
        int status = 0;
        waitpid(pid, &status, 0);
        char how[64] = "";
        if (WIFSIGNALED(status))
            snprintf(how, sizeof how, WTERMSIG(status) == SIGALRM ? "timeout after %d s" : "signal %d",
                     WTERMSIG(status) == SIGALRM ? TIMEOUT_S : WTERMSIG(status));
        else if (WEXITSTATUS(status))
            snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(status));
        if (!how[0] && !note) {
            passed++;
        } else if (!how[0]) {
            now_passing++;
            printf("now passing: %s (listed as open: %s); remove its line from the open-bug list\n", path, note);
        } else if (note) {
            still_open++;
            printf("open bug:    %s: %s (%s)\n", path, how, note);
        } else {
            failed++;
            printf("FAILED:      %s: %s\n", path, how);
        }
    }
    printf("replay: %zu inputs: %d passed, %d failed, %d known open bugs still failing, %d listed as open now pass\n",
           files.n, passed, failed, still_open, now_passing);
    return failed ? 1 : 0;
}
