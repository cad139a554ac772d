/*
 * `zmpi config`: every zmpi setting with its value and where it comes from
 * (the environment, the ZMPI_CONFIG file or the default), and whether the
 * value is valid, alone and with the others - the same checks every zmpi
 * call and libzmpi_preload.so make. Exit status 1 if any ZMPI_ variable of
 * the environment or line of the file is malformed or unknown, or the
 * settings do not go together.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zmpi/zmpi.h"

extern char **environ;

/* For ZMPI_<COLL>_ALGORITHM: the collective's algorithm names (its first is
 * the default's basis), from the algorithm tables. */
static void print_algorithms(const char *name, int md)
{
    for (int c = 0; c < ZMPI_COLL_COUNT; c++) {
        char want[64], *q = want;
        q += snprintf(want, sizeof want, "ZMPI_");
        for (const char *p = ZMPI_Coll_name((ZMPI_Coll)c); *p && q < want + 40; p++)
            *q++ = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
        snprintf(q, (size_t)(want + sizeof want - q), "_ALGORITHM");
        if (strcmp(want, name))
            continue;
        const char *names[32];
        int k = ZMPI_Coll_algorithms((ZMPI_Coll)c, 32, NULL, names, NULL);
        const char *bq = md ? "`" : ""; /* Markdown: code spans */
        printf(": %smpi%s, %sdefault%s", bq, bq, bq, bq);
        for (int i = 0; i < k && i < 32; i++)
            printf(", %s%s%s", bq, names[i], bq);
    }
}

/* The settings of a ZMPI_CONFIG file (ZMPI_Config_file_read's callback). */
typedef struct {
    struct {
        char *name, *value;
    } *e;
    size_t n, cap;
} file_setting;

static int keep(const char *name, const char *value, void *arg)
{
    file_setting *fs = arg;
    if (fs->n == fs->cap) {
        size_t cap = fs->cap ? 2 * fs->cap : 16;
        void *p = realloc(fs->e, cap * sizeof *fs->e);
        if (!p)
            return MPI_ERR_NO_MEM;
        fs->e = p;
        fs->cap = cap;
    }
    fs->e[fs->n].name = strdup(name);
    fs->e[fs->n].value = strdup(value);
    if (!fs->e[fs->n].name || !fs->e[fs->n].value) {
        free(fs->e[fs->n].name);
        free(fs->e[fs->n].value);
        return MPI_ERR_NO_MEM;
    }
    fs->n++;
    return MPI_SUCCESS;
}

static const char *file_value(const file_setting *fs, const char *name)
{
    for (size_t i = 0; i < fs->n; i++)
        if (!strcmp(fs->e[i].name, name))
            return fs->e[i].value;
    return NULL;
}

/* The settings table as Markdown: variable, default, meaning. */
static int print_markdown(void)
{
    int n = ZMPI_Setting_info(-1, NULL, NULL, NULL);
    printf("| variable | default | meaning |\n|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        const char *name, *def, *doc;
        ZMPI_Setting_info(i, &name, &def, &doc);
        printf("| `%s` | %s | ", name, def);
        for (const char *p = doc; *p; p++)
            fputs(*p == '|' ? "\\|" : (char[]){*p, 0}, stdout);
        print_algorithms(name, 1);
        printf(" |\n");
    }
    return 0;
}

int zmpi_cli_config(int argc, char **argv)
{
    if (argc > 0 && (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help"))) {
        printf("usage: zmpi config [--markdown]\n"
               "Prints every ZMPI_ setting: its value, where it comes from (environment, the ZMPI_CONFIG\n"
               "file, or default), and whether the value is valid, alone and with the others. Exit\n"
               "status 1 if a ZMPI_ variable or a line of the file is malformed or unknown, or the\n"
               "settings do not go together (a fixed-precision codec with a bound).\n"
               "--markdown: the table of settings, defaults and meanings as Markdown (docs/configuration.md).\n");
        return 0;
    }
    if (argc == 1 && !strcmp(argv[0], "--markdown"))
        return print_markdown();
    if (argc > 0) {
        fprintf(stderr, "zmpi: config takes no arguments but --markdown\n");
        return 2;
    }
    int n = ZMPI_Setting_info(-1, NULL, NULL, NULL), bad = 0;
    char why[256];
    /* the settings file, as libzmpi_preload.so reads it: each name once,
     * its last value; the environment's own values win */
    const char *file = getenv("ZMPI_CONFIG");
    file_setting fs = {NULL, 0, 0};
    if (file && *file && ZMPI_Config_file_read(file, keep, &fs, why, (int)sizeof why) != MPI_SUCCESS) {
        printf("ZMPI_CONFIG=%s error: %s\n", file, why);
        bad = 1;
    }
    printf("%-31s %-14s %-11s %s\n", "setting", "value", "origin", "meaning");
    for (int i = 0; i < n; i++) {
        const char *name, *def, *doc;
        ZMPI_Setting_info(i, &name, &def, &doc);
        const char *v = getenv(name), *fv = file_value(&fs, name), *origin = "default";
        if (v && *v)
            origin = "environment";
        else if (fv)
            v = fv, origin = "file";
        int set = v && *v;
        printf("%-31s %-14s %-11s %s", name, set ? v : def, origin, doc);
        print_algorithms(name, 0);
        printf("\n");
        if (set && ZMPI_Setting_check(name, v, why, (int)sizeof why) != MPI_SUCCESS) {
            printf("  ^ error: %s\n", why);
            bad = 1;
        }
        if (fv && strcmp(origin, "file"))
            printf("  (the environment's value wins over the file's %s)\n", fv);
    }
    for (char **e = environ; e && *e; e++) { /* names no row knows: typos */
        if (strncmp(*e, "ZMPI_", 5))
            continue;
        char name[128];
        size_t l = strcspn(*e, "=");
        snprintf(name, sizeof name, "%.*s", (int)(l < sizeof name - 1 ? l : sizeof name - 1), *e);
        if (ZMPI_Setting_check(name, "", why, (int)sizeof why) != MPI_SUCCESS && !strcmp(why, "unknown zmpi setting")) {
            printf("%-31s error: %s\n", name, why);
            bad = 1;
        }
    }
    /* together: the file's values join the environment, as in MPI_Init */
    for (size_t i = 0; i < fs.n; i++)
        if (!getenv(fs.e[i].name))
            setenv(fs.e[i].name, fs.e[i].value, 0);
    if (!bad && ZMPI_Config_env_check(why, (int)sizeof why) != MPI_SUCCESS) {
        printf("error: %s\n", why);
        bad = 1;
    }
    for (size_t i = 0; i < fs.n; i++) {
        free(fs.e[i].name);
        free(fs.e[i].value);
    }
    free(fs.e);
    return bad;
}
