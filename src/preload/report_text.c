/*
 * The report's two files. The text follows mpiP's report: its header lines
 * ("@ Command : ..."), section headings ("@--- MPI Time (seconds) ---") and
 * columns, so tools that read mpiP reports read it; zmpi's sections
 * (compression per call site, the advisor) come after mpiP's, before the
 * end line. The JSON carries the same data.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmpi/codec.h>

#include "preload/preload.h"
#include "preload_gen.h"

#define RULE "---------------------------------------------------------------------------\n"

/* "MPI_Send" -> "Send", as mpiP names calls. */
static const char *short_name(int call)
{
    const char *n = zp_call_names[call];
    return strncmp(n, "MPI_", 4) ? n : n + 4;
}

static void heading(FILE *f, const char *title)
{
    char line[80];
    int n = snprintf(line, sizeof line, "@--- %s ", title);
    while (n < 75 && n < (int)sizeof line - 1)
        line[n++] = '-';
    line[n] = '\0';
    fprintf(f, RULE "%s\n" RULE, line);
}

static double sum(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s;
}

static double pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0.0;
}

static const char *mode_name(const zp_run *r)
{
    return r->profile_only ? "profile-only (nothing compressed)"
           : r->routing    ? "compressing"
                           : "profiling (no compression configured)";
}

static void text_header(FILE *f, const zp_run *r)
{
    char rung[64];
    zmpi_codec c;
    zmpi_eb_mode m;
    double eb;
    zp_rung_setting(0, &c, &m, &eb, rung, sizeof rung);
    fprintf(f, "@ mpiP\n@ Command : %s\n", r->command ? r->command : "");
    fprintf(f, "@ Version                  : 3.5.0\n");
    fprintf(f, "@ MPIP Build date          : %s, %s\n", __DATE__, __TIME__);
    fprintf(f, "@ Start time               : %s\n@ Stop time                : %s\n", r->start, r->stop);
#ifdef ZMPI_PRELOAD_WTIME
    fprintf(f, "@ Timer Used               : PMPI_Wtime (the simulated clock of SimGrid SMPI)\n");
#else
    fprintf(f, "@ Timer Used               : clock_gettime(CLOCK_MONOTONIC)\n");
#endif
    fprintf(f, "@ MPIP env var             : [null]\n@ Collector Rank           : 0\n");
    fprintf(f, "@ Collector PID            : %ld\n@ Final Output Dir         : %s\n", r->pid, r->dir);
    fprintf(f, "@ Report generation        : Single collector task\n");
    for (int i = 0; i < r->nranks; i++)
        fprintf(f, "@ MPI Task Assignment      : %d %s\n", i, r->hosts + (size_t)i * MPI_MAX_PROCESSOR_NAME);
    fprintf(f, "@ zmpi version             : %s (libzmpi_preload.so)\n", zmpi_version());
    fprintf(f, "@ zmpi mode                : %s\n", mode_name(r));
    fprintf(f, "@ zmpi setting             : %s\n", rung);
    if (r->nodes > 0)
        fprintf(f, "@ zmpi nodes               : %d (%s)%s\n", r->nodes,
                r->cfg.node_ranks ? "emulated: ZMPI_NODE_RANKS" : "the ranks that share memory",
                r->nodes == 1 && r->nranks > 1 && !r->cfg.intra_node
                    ? "; every rank on one node: nothing is compressed (ZMPI_INTRA_NODE=plain), "
                      "ZMPI_NODE_RANKS=1 tries zmpi on one machine"
                    : "");
    unsigned long long tb = 0, tw = 0;
    for (int i = 0; i < r->nsites; i++)
        tb += r->sites[i].all.bytes, tw += r->sites[i].all.wire;
    fprintf(f, "@ zmpi bytes sent          : %llu asked, %llu on the wire (ratio %.2f; every communicator)\n\n", tb,
            tw, tw ? (double)tb / (double)tw : 1.0);
}

static void text_mpi_time(FILE *f, const zp_run *r)
{
    heading(f, "MPI Time (seconds)");
    fprintf(f, "Task    AppTime    MPITime     MPI%%\n");
    for (int i = 0; i < r->nranks; i++)
        fprintf(f, "%4d %10.3g %10.3g %8.2f\n", i, r->app[i], r->mpi[i], pct(r->mpi[i], r->app[i]));
    double app = sum(r->app, r->nranks), mpi = sum(r->mpi, r->nranks);
    fprintf(f, "   * %10.3g %10.3g %8.2f\n", app, mpi, pct(mpi, app));
}

static void text_sites(FILE *f, const zp_run *r)
{
    char title[64];
    snprintf(title, sizeof title, "Callsites: %d", r->nsites);
    heading(f, title);
    fprintf(f, " ID Lev File/Address             Line Parent_Funct                                 MPI_Call\n");
    for (int i = 0; i < r->nsites; i++) {
        const zp_gsite *g = &r->sites[i];
        fprintf(f, "%3d   0 %-24s %5d %-44s %s\n", g->id, g->loc.file, g->loc.line, g->loc.func, short_name(g->call));
    }
}

/* Site indexes ordered by descending key (time or bytes). */
static int *order_by(const zp_run *r, int by_bytes)
{
    int *o = malloc(sizeof(int) * (size_t)(r->nsites + 1));
    if (!o)
        return NULL;
    for (int i = 0; i < r->nsites; i++)
        o[i] = i;
    for (int i = 1; i < r->nsites; i++) /* insertion sort: stable, few sites */
        for (int j = i; j > 0; j--) {
            const zp_measure *a = &r->sites[o[j - 1]].all, *b = &r->sites[o[j]].all;
            unsigned long long ka = by_bytes ? a->bytes : a->ns, kb = by_bytes ? b->bytes : b->ns;
            if (ka >= kb)
                break;
            int t = o[j];
            o[j] = o[j - 1];
            o[j - 1] = t;
        }
    return o;
}

static void text_aggregates(FILE *f, const zp_run *r)
{
    double app = sum(r->app, r->nranks), mpi = sum(r->mpi, r->nranks);
    int *o = order_by(r, 0);
    heading(f, "Aggregate Time (top twenty, descending, milliseconds)");
    fprintf(f, "Call                 Site       Time    App%%    MPI%%      Count    COV\n");
    for (int i = 0; o && i < r->nsites && i < 20; i++) {
        const zp_gsite *g = &r->sites[o[i]];
        double t = (double)g->all.ns * 1e-9, mean = t / g->nrank;
        double var = g->time_sq / g->nrank - mean * mean;
        double cov = mean > 0 && var > 0 ? sqrt(var) / mean : 0.0;
        fprintf(f, "%-20s %4d %10.3g %7.2f %7.2f %10llu %6.2f\n", short_name(g->call), g->id, t * 1e3, pct(t, app),
                pct(t, mpi), g->all.count, cov);
    }
    free(o);
    unsigned long long total = 0;
    for (int i = 0; i < r->nsites; i++)
        total += r->sites[i].all.bytes;
    o = order_by(r, 1);
    heading(f, "Aggregate Sent Message Size (top twenty, descending, bytes)");
    fprintf(f, "Call                 Site      Count      Total       Avrg  Sent%%\n");
    for (int i = 0; o && i < r->nsites && i < 20 && r->sites[o[i]].all.bytes; i++) {
        const zp_gsite *g = &r->sites[o[i]];
        fprintf(f, "%-20s %4d %10llu %10.3g %10.3g %6.2f\n", short_name(g->call), g->id, g->all.sends,
                (double)g->all.bytes, (double)g->all.bytes / (double)g->all.sends,
                pct((double)g->all.bytes, (double)total));
    }
    free(o);
}

static void time_row(FILE *f, const zp_gsite *g, const char *rank, const zp_measure *m, double app, double mpi)
{
    double t = (double)m->ns * 1e-6;
    fprintf(f, "%-17s %4d %4s %6llu %8.3g %8.3g %8.3g %6.2f %6.2f\n", short_name(g->call), g->id, rank, m->count,
            (double)m->ns_max * 1e-6, m->count ? t / (double)m->count : 0.0, (double)m->ns_min * 1e-6,
            pct(t * 1e-3, app), pct(t * 1e-3, mpi));
}

static void sent_row(FILE *f, const zp_gsite *g, const char *rank, const zp_measure *m)
{
    fprintf(f, "%-17s %4d %4s %7llu %9.4g %9.4g %9.4g %9.4g\n", short_name(g->call), g->id, rank, m->sends,
            (double)m->bytes_max, (double)m->bytes / (double)m->sends, (double)m->bytes_min, (double)m->bytes);
}

/* mpiP's "all" sections: a row per rank (verbose) and the aggregate row. */
static void text_statistics(FILE *f, const zp_run *r, int verbose)
{
    char title[80], rank[16];
    double app = sum(r->app, r->nranks), mpi = sum(r->mpi, r->nranks);
    snprintf(title, sizeof title, "Callsite Time statistics (all, milliseconds): %d", r->nrows + r->nsites);
    heading(f, title);
    fprintf(f, "Name              Site Rank  Count      Max     Mean      Min   App%%   MPI%%\n");
    for (int i = 0; i < r->nsites; i++) {
        const zp_gsite *g = &r->sites[i];
        for (int j = g->first; verbose && j < g->first + g->nrank; j++) {
            const zp_grow *w = &r->rows[j];
            snprintf(rank, sizeof rank, "%d", w->rank);
            time_row(f, g, rank, &w->m, r->app[w->rank], r->mpi[w->rank]);
        }
        time_row(f, g, "*", &g->all, app, mpi);
        fputc('\n', f);
    }
    snprintf(title, sizeof title, "Callsite Message Sent statistics (all, sent bytes)");
    heading(f, title);
    fprintf(f, "Name              Site Rank   Count       Max      Mean       Min       Sum\n");
    for (int i = 0; i < r->nsites; i++) {
        const zp_gsite *g = &r->sites[i];
        if (!g->all.sends)
            continue;
        for (int j = g->first; verbose && j < g->first + g->nrank; j++) {
            const zp_grow *w = &r->rows[j];
            snprintf(rank, sizeof rank, "%d", w->rank);
            if (w->m.sends)
                sent_row(f, g, rank, &w->m);
        }
        sent_row(f, g, "*", &g->all);
        fputc('\n', f);
    }
}

static void fallbacks_text(char *s, size_t cap, const zp_measure *m)
{
    size_t n = 0;
    s[0] = '\0';
    for (int k = 0; k < ZP_NFB; k++)
        if (m->fb[k] && n < cap)
            n += (size_t)snprintf(s + n, cap - n, "%s%s:%llu", n ? "," : "", zp_fallback_names[k], m->fb[k]);
    if (!n)
        snprintf(s, cap, "-");
}

static void text_compression(FILE *f, const zp_run *r)
{
    char fb[128];
    heading(f, "zmpi Compression (per callsite, summed over ranks)");
    fprintf(f, "Call              Site   Calls   Compr   Plain     Raw(B)    Wire(B)   Ratio  Comp(ms) Dcmp(ms) "
               "Fallbacks\n");
    for (int i = 0; i < r->nsites; i++) {
        const zp_gsite *g = &r->sites[i];
        const zp_measure *m = &g->all;
        if (!m->sends && !m->ns_decomp)
            continue;
        unsigned long long plain = m->sends > m->compressed ? m->sends - m->compressed : 0;
        fallbacks_text(fb, sizeof fb, m);
        fprintf(f, "%-17s %4d %7llu %7llu %7llu %10.4g %10.4g %7.2f %9.3g %8.3g %s\n", short_name(g->call), g->id,
                m->count, m->compressed, plain, (double)m->bytes, (double)m->wire,
                m->wire ? (double)m->bytes / (double)m->wire : 1.0, (double)m->ns_comp * 1e-6,
                (double)m->ns_decomp * 1e-6, fb);
    }
}

static void text_advisor(FILE *f, const zp_run *r)
{
    char name[64];
    heading(f, "zmpi Advisor (seconds saved per rank; sampled messages)");
    fprintf(f, "(verdicts decided on %s; ZMPI_NET_BW names the run's own network)\n",
            zp_config()->net_bw > 0 ? "ZMPI_NET_BW" : zp_nets[1].name);
    fprintf(f, "Call              Site   AvgBytes Samples   Ratio MaxErr/EB     1GbE    10GbE    100Gb Verdict\n");
    for (int i = 0; i < r->nsites; i++) {
        const zp_gsite *g = &r->sites[i];
        if (!g->advised)
            continue;
        if (!g->ratio) /* no samples, nothing compressed: nothing measured to show */
            fprintf(f, "%-17s %4d %10.4g %7u %7s %9s %8s %8s %8s %s\n", short_name(g->call), g->id,
                    (double)g->all.bytes / (double)g->all.sends, g->all.nsamples, "-", "-", "-", "-", "-",
                    g->verdict ? g->verdict : "-");
        else
            fprintf(f, "%-17s %4d %10.4g %7u %7.2f %9.3g %8.3g %8.3g %8.3g %s\n", short_name(g->call), g->id,
                    (double)g->all.bytes / (double)g->all.sends, g->all.nsamples, g->ratio, g->max_err_over_eb,
                    g->saving_s[0], g->saving_s[1], g->saving_s[2], g->verdict ? g->verdict : "-");
    }
    heading(f, "zmpi Advisor ladder (ratio; seconds saved per rank)");
    fprintf(f, "Call              Site Setting                 Ratio MaxErr/EB     1GbE    10GbE    100Gb\n");
    for (int i = 0; i < r->nsites; i++) {
        const zp_gsite *g = &r->sites[i];
        if (!g->advised || !g->all.nsamples)
            continue;
        for (int k = 0; k < ZP_NRUNG; k++) {
            zmpi_codec c;
            zmpi_eb_mode m;
            double eb;
            zp_rung_setting(k, &c, &m, &eb, name, sizeof name);
            fprintf(f, "%-17s %4d %-22s %7.2f %9.3g %8.3g %8.3g %8.3g\n", short_name(g->call), g->id, name,
                    g->rung_ratio[k], g->all.err[k], g->rung_saving_s[k][0], g->rung_saving_s[k][1],
                    g->rung_saving_s[k][2]);
        }
        fputc('\n', f);
    }
}

void zp_write_text(FILE *f, const zp_run *r, int verbose)
{
    text_header(f, r);
    text_mpi_time(f, r);
    text_sites(f, r);
    text_aggregates(f, r);
    text_statistics(f, r, verbose);
    text_compression(f, r);
    text_advisor(f, r);
    heading(f, "End of Report");
}

/* ---- JSON ---- */

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0 if the bytes
 * there are not one (a stray continuation byte, a truncated, overlong or
 * surrogate sequence, beyond U+10FFFF). */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] < 0x80 ? 1 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
          : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] > 0x9F) || (s[0] == 0xF0 && s[1] < 0x90) ||
        (s[0] == 0xF4 && s[1] > 0x8F))
        return 0;
    return n;
}

/* A JSON string: quotes, backslashes and control characters escaped, and a
 * byte that is not valid UTF-8 (a program name or argument in another
 * encoding) replaced by U+FFFD, so that the report always parses. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; p && *p;) {
        int n = utf8_len(p);
        if (n == 0) {
            fputs("\\ufffd", f);
            p++;
        } else if (n > 1) {
            fwrite(p, 1, (size_t)n, f);
            p += n;
        } else {
            if (*p == '"' || *p == '\\')
                fprintf(f, "\\%c", *p);
            else if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
            p++;
        }
    }
    fputc('"', f);
}

/* A number; an infinite one (an error over the bound that could not be
 * measured) as 1e999, which JSON readers take as infinity. */
static void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fprintf(f, "1e999");
}

static void json_savings(FILE *f, const double *s)
{
    fprintf(f, "{");
    for (int k = 0; k < ZP_NNET; k++) {
        fprintf(f, "%s\"%s\": ", k ? ", " : "", zp_nets[k].name);
        json_number(f, s[k]);
    }
    fprintf(f, "}");
}

static void json_advice(FILE *f, const zp_gsite *g)
{
    char name[64];
    if (!g->advised) {
        fprintf(f, "null");
        return;
    }
    fprintf(f, "{\"ratio\": ");
    if (g->ratio)
        json_number(f, g->ratio);
    else
        fprintf(f, "null"); /* no samples, nothing compressed */
    fprintf(f, ", \"saving_s\": ");
    json_savings(f, g->saving_s);
    fprintf(f, ", \"verdict\": ");
    json_string(f, g->verdict);
    fprintf(f, ", \"verdict_network\": ");
    json_string(f, g->verdict_network);
    fprintf(f, ", \"samples\": %u, \"ladder\": [", g->all.nsamples);
    for (int k = 0; g->all.nsamples && k < ZP_NRUNG; k++) {
        zmpi_codec c;
        zmpi_eb_mode m;
        double eb;
        zp_rung_setting(k, &c, &m, &eb, name, sizeof name);
        fprintf(f, "%s{\"setting\": ", k ? ", " : "");
        json_string(f, name);
        fprintf(f, ", \"ratio\": ");
        json_number(f, g->rung_ratio[k]);
        fprintf(f, ", \"max_err_over_eb\": ");
        json_number(f, g->all.err[k]);
        fprintf(f, ", \"saving_s\": ");
        json_savings(f, g->rung_saving_s[k]);
        fprintf(f, "}");
    }
    fprintf(f, "]}");
}

static void json_site(FILE *f, const zp_gsite *g)
{
    const zp_measure *m = &g->all;
    fprintf(f, "  {\"id\": %d, \"call\": \"%s\", \"location\": ", g->id, zp_call_names[g->call]);
    char loc[128];
    snprintf(loc, sizeof loc, "%s:%d", g->loc.file, g->loc.line);
    json_string(f, loc);
    fprintf(f, ", \"function\": ");
    json_string(f, g->loc.func);
    fprintf(f, ", \"ranks\": %d, \"count\": %llu, \"time_s\": %.9g, \"sends\": %llu, \"bytes\": %llu, "
               "\"bytes_wire\": %llu, \"compressed_calls\": %llu, \"fallbacks\": {",
            g->nrank, m->count, (double)m->ns * 1e-9, m->sends, m->bytes, m->wire, m->compressed);
    for (int k = 0, sep = 0; k < ZP_NFB; k++)
        if (m->fb[k]) {
            fprintf(f, "%s\"%s\": %llu", sep++ ? ", " : "", zp_fallback_names[k], m->fb[k]);
        }
    fprintf(f, "}, \"compress_time_s\": %.9g, \"decompress_time_s\": %.9g, \"max_err_over_eb\": ",
            (double)m->ns_comp * 1e-9, (double)m->ns_decomp * 1e-9);
    if (g->advised && m->nsamples)
        json_number(f, g->max_err_over_eb);
    else
        fprintf(f, "null");
    fprintf(f, ", \"advice\": ");
    json_advice(f, g);
    fprintf(f, "}");
}

void zp_write_json(FILE *f, const zp_run *r)
{
    char rung[64];
    zmpi_codec c;
    zmpi_eb_mode m;
    double eb, app_max = 0;
    zp_rung_setting(0, &c, &m, &eb, rung, sizeof rung);
    for (int i = 0; i < r->nranks; i++)
        app_max = r->app[i] > app_max ? r->app[i] : app_max;
    fprintf(f, "{\"version\": 1, \"command\": ");
    json_string(f, r->command);
    fprintf(f, ", \"ranks\": %d, \"app_time_s\": %.9g, \"app_time_max_s\": %.9g, \"mpi_time_s\": %.9g,\n",
            r->nranks, sum(r->app, r->nranks), app_max, sum(r->mpi, r->nranks));
    fprintf(f, " \"mode\": \"%s\", \"setting\": ", r->profile_only ? "profile-only" : r->routing ? "compress" : "profile");
    json_string(f, rung);
    fprintf(f, ", \"networks\": {");
    for (int k = 0; k < ZP_NNET; k++)
        fprintf(f, "%s\"%s\": {\"bytes_per_s\": %.9g, \"latency_s\": %.9g}", k ? ", " : "", zp_nets[k].name,
                zp_nets[k].bw, zp_nets[k].lat);
    unsigned long long tb = 0, tw = 0, tc = 0;
    for (int i = 0; i < r->nsites; i++)
        tb += r->sites[i].all.bytes, tw += r->sites[i].all.wire, tc += r->sites[i].all.compressed;
    fprintf(f, "},\n \"totals\": {\"bytes\": %llu, \"bytes_wire\": %llu, \"compressed_calls\": %llu}", tb, tw, tc);
    fprintf(f, ",\n \"zmpi\": {\"comm\": \"MPI_COMM_WORLD\", \"calls\": %llu, \"compressed\": %llu, "
               "\"bytes_raw\": %llu, \"bytes_sent\": %llu, \"nodes\": %d},\n \"calls\": [",
            r->zs[0], r->zs[1], r->zs[2], r->zs[3], r->nodes);
    for (int i = 0, sep = 0; i < ZP_NCALLS; i++) {
        if (!r->calls[i])
            continue;
        fprintf(f, "%s\n  {\"call\": \"%s\", \"count\": %llu, \"time_s\": %.9g, \"bytes\": %llu}", sep++ ? "," : "",
                zp_call_names[i], r->calls[i], r->call_time[i], r->call_bytes[i]);
    }
    fprintf(f, "\n ],\n \"sites\": [\n");
    for (int i = 0; i < r->nsites; i++) {
        json_site(f, &r->sites[i]);
        fprintf(f, "%s\n", i + 1 < r->nsites ? "," : "");
    }
    fprintf(f, " ]}\n");
}
