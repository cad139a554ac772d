/* zmpi report: the reader of libzmpi_preload.so's JSON reports is a Python
 * script (python/zmpi/report.py, installed as zmpi_report.py into share/zmpi); this
 * subcommand runs it with the interpreter that has matplotlib. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The script next to an installed zmpi (../share/zmpi), else the source
 * tree's. */
static int find_script(char *out, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(out, cap, "%s/../share/zmpi/zmpi_report.py", exe);
            if (access(out, R_OK) == 0)
                return 1;
        }
    }
    snprintf(out, cap, "%s", ZMPI_REPORT_SCRIPT);
    return access(out, R_OK) == 0;
}

int zmpi_cli_report(int argc, char **argv)
{
    char script[PATH_MAX + 64];
    if (!find_script(script, sizeof script)) {
        fprintf(stderr, "zmpi report: zmpi_report.py not found (looked next to zmpi and at %s)\n", ZMPI_REPORT_SCRIPT);
        return 1;
    }
    /* ZMPI_PYTHON, else the project's venv (numpy, matplotlib), else python3 */
    const char *python = getenv("ZMPI_PYTHON");
    if (!python || !*python)
        python = access(ZMPI_VENV_PYTHON, X_OK) == 0 ? ZMPI_VENV_PYTHON : "python3";
    char **args = calloc((size_t)argc + 3, sizeof *args);
    if (!args) {
        fprintf(stderr, "zmpi report: out of memory\n");
        return 1;
    }
    args[0] = (char *)python;
    args[1] = script;
    for (int i = 0; i < argc; i++)
        args[i + 2] = argv[i];
    execvp(python, args);
    fprintf(stderr, "zmpi report: cannot run %s: %s (set ZMPI_PYTHON)\n", python, strerror(errno));
    free(args);
    return 1;
}
