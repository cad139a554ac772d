/*
 * `zmpi config`: every zmpi setting with its value and where it comes from
 * (the environment or the default), and whether the value is valid - the
 * same check every zmpi call makes. Exit status 1 if any ZMPI_ variable of
 * the environment is malformed or unknown.
 */
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
               "Prints every ZMPI_ setting: its value, where it comes from (environment or default),\n"
               "and whether the value is valid. Exit status 1 if a ZMPI_ variable is malformed or unknown.\n"
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
    printf("%-31s %-14s %-11s %s\n", "setting", "value", "origin", "meaning");
    for (int i = 0; i < n; i++) {
        const char *name, *def, *doc;
        ZMPI_Setting_info(i, &name, &def, &doc);
        const char *v = getenv(name);
        int set = v && *v;
        printf("%-31s %-14s %-11s %s", name, set ? v : def, set ? "environment" : "default", doc);
        print_algorithms(name, 0);
        printf("\n");
        if (set && ZMPI_Setting_check(name, v, why, (int)sizeof why) != MPI_SUCCESS) {
            printf("  ^ error: %s\n", why);
            bad = 1;
        }
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
    return bad;
}
