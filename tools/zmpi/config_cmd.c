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

int zmpi_cli_config(int argc, char **argv)
{
    if (argc > 0 && (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help"))) {
        printf("usage: zmpi config\n"
               "Prints every ZMPI_ setting: its value, where it comes from (environment or default),\n"
               "and whether the value is valid. Exit status 1 if a ZMPI_ variable is malformed or unknown.\n");
        return 0;
    }
    if (argc > 0) {
        fprintf(stderr, "zmpi: config takes no arguments\n");
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
        printf("%-31s %-14s %-11s %s\n", name, set ? v : def, set ? "environment" : "default", doc);
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
