/* Quality metrics shared by every tool that reports quality (ratio, max error, RMSE, NRMSE, PSNR, throughput). */
#include <math.h>
#include <string.h>

#include "internal.h"

int zmpi_quality_compare(const void *orig, const void *recon, size_t count, zmpi_dtype dtype,
                         zmpi_quality *out)
{
    if (!out || (count > 0 && (!orig || !recon)))
        return ZMPI_ERR_ARG;
    if (dtype != ZMPI_FLOAT && dtype != ZMPI_DOUBLE)
        return ZMPI_ERR_DTYPE;
    double mn = INFINITY, mx = -INFINITY, maxe = 0.0, sse = 0.0;
    uint64_t bad = 0, nfin = 0;
    for (size_t i = 0; i < count; i++) {
        double x, y;
        int same_bits;
        if (dtype == ZMPI_FLOAT) {
            float a = ((const float *)orig)[i], b = ((const float *)recon)[i];
            x = a;
            y = b;
            same_bits = memcmp(&a, &b, 4) == 0;
        } else {
            x = ((const double *)orig)[i];
            y = ((const double *)recon)[i];
            same_bits = memcmp(&x, &y, 8) == 0;
        }
        if (!isfinite(x)) {
            bad += !same_bits;
            continue;
        }
        if (!isfinite(y)) {
            bad++;
            continue;
        }
        mn = x < mn ? x : mn;
        mx = x > mx ? x : mx;
        double e = fabs(x - y);
        maxe = e > maxe ? e : maxe;
        sse += e * e;
        nfin++;
    }
    double range = nfin ? mx - mn : 0.0;
    out->max_abs_err = maxe;
    out->rmse = nfin ? sqrt(sse / (double)nfin) : 0.0;
    out->value_range = range;
    out->nrmse = range > 0 ? out->rmse / range : 0.0;
    out->psnr = out->rmse > 0 ? 20.0 * log10(range / out->rmse) : INFINITY;
    out->nonfinite_mismatch = bad;
    return ZMPI_OK;
}
