/*
 * Working buffers kept between calls (ZMPI_SCRATCH): collectives of changing
 * sizes and algorithms on one communicator, with nothing kept, with a limit
 * that keeps only some buffers, and with the default, give results within
 * the bound on every element (so no call sees another call's data or a
 * buffer too small); the bytes kept never exceed the limit, are 0 when
 * nothing may be kept, and are returned when the configuration changes.
 * ZMPI_SCRATCH parses sizes with units and rejects malformed values.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "mpitest.h"

static mt_state T;

static void round_trips(size_t keep)
{
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    ZMPI_Config cfg;
    ZMPI_Config_from_env(&cfg, NULL);
    cfg.codec = ZMPI_CODEC_FZL;
    cfg.eb_mode = ZMPI_EB_ABS;
    cfg.eb = 1e-3;
    cfg.min_bytes = 0;
    cfg.scratch_keep = keep;
    size_t sizes[] = {(size_t)1 << 17, (size_t)1 << 15, 3, (size_t)1 << 18, (size_t)1 << 17};
    size_t nmax = (size_t)1 << 18, m = nmax * (size_t)T.size;
    float *in = malloc(nmax * sizeof *in), *ref = malloc(m * sizeof *ref), *got = malloc(m * sizeof *got);
    const char *allreduce_algos[] = {"rhd", "ring", "rhd", "cprp2p", "rhd"};
    for (int k = 0; k < 5; k++) {
        int n = (int)sizes[k];
        cfg.algorithm[ZMPI_COLL_ALLREDUCE] = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_ALLREDUCE, allreduce_algos[k]);
        MT_CHECK(&T, ZMPI_Comm_set_config(comm, &cfg) == MPI_SUCCESS, "set config");
        mt_fill_field(in, (size_t)n, MPI_FLOAT, (size_t)(T.rank * 31 + k));
        double worst = 0;

        MPI_Allreduce(in, ref, n, MPI_FLOAT, MPI_MAX, comm);
        int rc = ZMPI_Allreduce(in, got, n, MPI_FLOAT, MPI_MAX, comm);
        size_t bad = mt_violations(got, ref, (size_t)n, MPI_FLOAT, 1e-3, &worst);
        MT_CHECK(&T, rc == MPI_SUCCESS && bad == 0, "keep %zu allreduce %s n %d: rc %d, %zu beyond (worst %g)", keep,
                 allreduce_algos[k], n, rc, bad, worst);
        mt_check_algo(&T, comm, ZMPI_COLL_ALLREDUCE, cfg.algorithm[ZMPI_COLL_ALLREDUCE], T.size > 1,
                      allreduce_algos[k]);

        memcpy(ref, in, (size_t)n * sizeof *in);
        MPI_Bcast(ref, n, MPI_FLOAT, k % T.size, comm);
        memcpy(got, in, (size_t)n * sizeof *in);
        rc = ZMPI_Bcast(got, n, MPI_FLOAT, k % T.size, comm);
        bad = mt_violations(got, ref, (size_t)n, MPI_FLOAT, 1e-3, &worst);
        MT_CHECK(&T, rc == MPI_SUCCESS && bad == 0, "keep %zu bcast n %d: rc %d, %zu beyond", keep, n, rc, bad);

        MPI_Allgather(in, n, MPI_FLOAT, ref, n, MPI_FLOAT, comm);
        rc = ZMPI_Allgather(in, n, MPI_FLOAT, got, n, MPI_FLOAT, comm);
        bad = mt_violations(got, ref, (size_t)n * (size_t)T.size, MPI_FLOAT, 1e-3, &worst);
        MT_CHECK(&T, rc == MPI_SUCCESS && bad == 0, "keep %zu allgather n %d: rc %d, %zu beyond", keep, n, rc, bad);

        ZMPI_Stats st;
        ZMPI_Comm_get_stats(comm, &st);
        MT_CHECK(&T, st.scratch_bytes <= keep, "keep %zu: %llu bytes kept", keep, st.scratch_bytes);
        if (keep >= ((size_t)64 << 20) && T.size > 1 && n >= (1 << 17))
            MT_CHECK(&T, st.scratch_bytes > 0, "default limit: nothing kept after n %d", n);
    }
    cfg.scratch_keep = 0;
    ZMPI_Comm_set_config(comm, &cfg);
    ZMPI_Stats st;
    ZMPI_Comm_get_stats(comm, &st);
    MT_CHECK(&T, st.scratch_bytes == 0, "new configuration: %llu bytes still kept", st.scratch_bytes);
    free(in);
    free(ref);
    free(got);
    MPI_Comm_free(&comm);
}

static void environment(void)
{
    struct {
        const char *val;
        int ok;
        double want;
    } cases[] = {{"0", 1, 0}, {"64M", 1, 64e6}, {"1G", 1, 1e9}, {"1048576", 1, 1048576},
                 {"lots", 0, 0}, {"-1", 0, 0}, {"", 1, 256.0 * 1048576}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("ZMPI_SCRATCH", cases[i].val, 1);
        ZMPI_Config cfg;
        const char *bad = NULL;
        int rc = ZMPI_Config_from_env(&cfg, &bad);
        unsetenv("ZMPI_SCRATCH");
        if (!cases[i].ok)
            MT_CHECK(&T, rc != MPI_SUCCESS && bad && !strcmp(bad, "ZMPI_SCRATCH"), "ZMPI_SCRATCH=%s accepted",
                     cases[i].val);
        else
            MT_CHECK(&T, rc == MPI_SUCCESS && (double)cfg.scratch_keep == cases[i].want, "ZMPI_SCRATCH=%s -> %zu",
                     cases[i].val, cfg.scratch_keep);
    }
}

int main(int argc, char **argv)
{
    mt_init(&T, &argc, &argv, "test_scratch");
    round_trips(0);
    round_trips(1 << 20); /* some buffers of the largest calls are not kept */
    round_trips((size_t)256 << 20);
    environment();
    return mt_finish(&T);
}
