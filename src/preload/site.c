/*
 * Call sites of libzmpi_preload.so: which program address an MPI call came
 * from (glibc's backtrace() and dladdr() when the call came through an MPI
 * language binding), and the source file, line and function of an address
 * (elfutils' libdw reading the objects' debug information, as addr2line
 * does).
 */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/preload.h"

static const char *base_name(const char *path)
{
    const char *b = path ? strrchr(path, '/') : NULL;
    return b ? b + 1 : path ? path : "";
}

/* MPI libraries whose functions call the C MPI_ functions for the program:
 * MPICH's Fortran bindings (libmpifort; libmpichfort in Debian), Open MPI's (libmpi_mpifh,
 * libmpi_usempi*). A call from inside them is counted at the program
 * address that called them. */
static int is_binding(const char *path)
{
    static const char *const names[] = {"libmpifort.", "libmpichfort.", "libmpi_mpifh.", "libmpi_usempi", "libfmpich.",
                                        "libmpichf90."};
    const char *b = base_name(path);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strncmp(b, names[i], strlen(names[i])))
            return 1;
    return 0;
}

void *zp_caller(void *ra, int *binding)
{
    Dl_info info, self;
    *binding = 0;
    if (!dladdr(ra, &info) || !is_binding(info.dli_fname))
        return ra;
    *binding = 1;
    void *frames[24];
    int n = backtrace(frames, 24);
    int have_self = dladdr((void *)zp_caller, &self) != 0;
    for (int i = 0; i < n; i++) {
        if (!dladdr(frames[i], &info))
            return frames[i];
        if ((have_self && info.dli_fbase == self.dli_fbase) || is_binding(info.dli_fname))
            continue;
        return frames[i];
    }
    return ra;
}

static Dwfl *open_dwfl(void)
{
    static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
    };
    Dwfl *d = dwfl_begin(&callbacks);
    if (!d)
        return NULL;
    dwfl_report_begin(d);
    if (dwfl_linux_proc_report(d, getpid()) != 0 || dwfl_report_end(d, NULL, NULL) != 0) {
        dwfl_end(d);
        return NULL;
    }
    return d;
}

/* Without line information: the object's base name and the offset of the
 * address in it. */
static void by_object(void *addr, zp_location *loc)
{
    Dl_info info;
    if (dladdr(addr, &info) && info.dli_fname) {
        snprintf(loc->file, sizeof loc->file, "%s+0x%lx", base_name(info.dli_fname),
                 (unsigned long)((char *)addr - (char *)info.dli_fbase));
        if (!loc->func[0] && info.dli_sname)
            snprintf(loc->func, sizeof loc->func, "%s", info.dli_sname);
    } else {
        snprintf(loc->file, sizeof loc->file, "0x%lx", (unsigned long)(uintptr_t)addr);
    }
}

/* A C++ function's name demangled by the program's own C++ runtime
 * (__cxa_demangle of libstdc++, looked up at run time: a C++ program has
 * it loaded, a C program does not need it); else as it is. */
static void set_function(zp_location *loc, const char *name)
{
    typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
    demangle_fn demangle = NULL;
    if (name[0] == '_' && name[1] == 'Z') {
        void *sym = dlsym(RTLD_DEFAULT, "__cxa_demangle");
        memcpy(&demangle, &sym, sizeof demangle);
    }
    int status = -1;
    char *plain = demangle ? demangle(name, NULL, NULL, &status) : NULL;
    snprintf(loc->func, sizeof loc->func, "%s", plain && status == 0 ? plain : name);
    free(plain);
}

static void locate_one(Dwfl *d, void *addr, zp_location *loc)
{
    memset(loc, 0, sizeof *loc);
    /* a return address: the call instruction is just before it */
    Dwarf_Addr a = (Dwarf_Addr)(uintptr_t)addr - 1;
    Dwfl_Module *m = d ? dwfl_addrmodule(d, a) : NULL;
    const char *fn = m ? dwfl_module_addrname(m, a) : NULL;
    if (fn)
        set_function(loc, fn);
    Dwfl_Line *l = m ? dwfl_module_getsrc(m, a) : NULL;
    int line = 0;
    const char *file = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
    if (file) {
        snprintf(loc->file, sizeof loc->file, "%s", base_name(file));
        snprintf(loc->path, sizeof loc->path, "%s", file);
        loc->line = line;
    } else {
        by_object(addr, loc);
    }
    if (!loc->func[0])
        snprintf(loc->func, sizeof loc->func, "[unknown]");
}

void zp_locate(void *const *addrs, size_t n, zp_location *locs)
{
    Dwfl *d = n ? open_dwfl() : NULL;
    for (size_t i = 0; i < n; i++)
        locate_one(d, addrs[i], &locs[i]);
    if (d)
        dwfl_end(d);
}
