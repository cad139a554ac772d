/*
 * apps/atmos/cases.c - the test cases: initial conditions, the analytic
 * solution of case 2, the Coriolis parameter, the tracer's initial field
 * and its exact solution in case 2, the initial perturbation. No
 * communication.
 *
 * Case 2 (Williamson et al. 1992, "global steady state nonlinear zonal
 * geostrophic flow"): u0 = 2 pi a / 12 days, g h0 = 2.94e4 m^2/s^2, the
 * flow's axis tilted by alpha; a steady state, so the analytic solution is
 * the initial state. Case 6: the Rossby-Haurwitz wave of wavenumber 4
 * (omega = K = 7.848e-6 s^-1, h0 = 8000 m). Galewsky et al. (2004): the
 * barotropically unstable mid-latitude jet (u_max = 80 m/s between
 * latitudes pi/7 and 5 pi/14, h in gradient-wind balance, mean depth
 * 10 km), with --bump H its localised bump of H metres (120 in the paper)
 * that starts the instability at once; without it round-off (or --perturb)
 * starts it.
 *
 * Layers: layer k is the same case with its velocity amplitude (case 2:
 * u0; case 6: omega and K; galewsky: u_max) divided by 1 + 0.01 k (the
 * height field follows from the balance), so layer 0 is the standard case.
 *
 * The tracer (every layer): a cosine bell of radius a/3 and height 1
 * centred at longitude 3 pi / 2, latitude pi / 4. In case 2 the flow is a
 * solid-body rotation (axis (-sin alpha, 0, cos alpha), angular speed
 * u0/a), so the exact tracer at time t is the initial one rotated back.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atmos.h"

#define C2_GH0 2.94e4
#define RH_OMEGA 7.848e-6
#define RH_H0 8000.0
#define RH_R 4
#define JET_UMAX 80.0
#define JET_H0 10000.0
#define JET_SIMPSON 2000 /* intervals of the balance integral's quadrature */

int case_parse(atmos *s)
{
    if (!strcmp(s->case_name, "2"))
        s->tcase = CASE_STEADY;
    else if (!strcmp(s->case_name, "6"))
        s->tcase = CASE_RH;
    else if (!strcmp(s->case_name, "galewsky"))
        s->tcase = CASE_JET;
    else
        return -1;
    return 0;
}

static double layer_factor(int layer)
{
    return 1 / (1 + 0.01 * layer);
}

double case_phibar(const atmos *s)
{
    return s->tcase == CASE_STEADY ? C2_GH0 : AT_GRAV * (s->tcase == CASE_RH ? RH_H0 : JET_H0);
}

double case_default_nu4(const atmos *s)
{
    double r = 42.0 / s->M;
    return s->tcase == CASE_STEADY ? 0 : 1e16 * r * r * r * r;
}

double case_coriolis(const atmos *s, double lon, double lat)
{
    double al = s->alpha_deg * AT_PI / 180;
    if (s->tcase != CASE_STEADY)
        al = 0;
    return 2 * AT_OMEGA * (-cos(lon) * cos(lat) * sin(al) + sin(lat) * cos(al));
}

static void steady(const atmos *s, int layer, double lon, double lat, double *u, double *v, double *h)
{
    double u0 = 2 * AT_PI * AT_RADIUS / (12 * AT_DAY) * layer_factor(layer), al = s->alpha_deg * AT_PI / 180;
    double t = -cos(lon) * cos(lat) * sin(al) + sin(lat) * cos(al);
    *u = u0 * (cos(lat) * cos(al) + cos(lon) * sin(lat) * sin(al));
    *v = -u0 * sin(lon) * sin(al);
    *h = (C2_GH0 - (AT_RADIUS * AT_OMEGA * u0 + u0 * u0 / 2) * t * t) / AT_GRAV;
}

static void rossby_haurwitz(int layer, double lon, double lat, double *u, double *v, double *h)
{
    double w = RH_OMEGA * layer_factor(layer), K = w, R = RH_R, a = AT_RADIUS, c = cos(lat), sn = sin(lat);
    double cr1 = pow(c, R - 1), cr = cr1 * c, c2r = cr * cr, c2 = c * c;
    *u = a * w * c + a * K * cr1 * (R * sn * sn - c2) * cos(R * lon);
    *v = -a * K * R * cr1 * sn * sin(R * lon);
    double A = w / 2 * (2 * AT_OMEGA + w) * c2 +
               K * K / 4 * c2r * ((R + 1) * c2 + (2 * R * R - R - 2) - 2 * R * R / c2);
    double B = 2 * (AT_OMEGA + w) * K / ((R + 1) * (R + 2)) * cr * ((R * R + 2 * R + 2) - (R + 1) * (R + 1) * c2);
    double C = K * K / 4 * c2r * ((R + 1) * c2 - (R + 2));
    *h = RH_H0 + a * a * (A + B * cos(R * lon) + C * cos(2 * R * lon)) / AT_GRAV;
}

static double jet_u(int layer, double lat)
{
    double p0 = AT_PI / 7, p1 = AT_PI / 2 - p0, en = exp(-4 / ((p1 - p0) * (p1 - p0)));
    if (lat <= p0 || lat >= p1)
        return 0;
    return JET_UMAX * layer_factor(layer) / en * exp(1 / ((lat - p0) * (lat - p1)));
}

/* g h(lat) - g h(-pi/2) = -integral of a u (f + u tan(lat) / a) (Simpson). */
static double jet_gh(int layer, double lat)
{
    double p0 = AT_PI / 7, p1 = AT_PI / 2 - p0, hi = lat < p1 ? lat : p1;
    if (hi <= p0)
        return 0;
    double d = (hi - p0) / JET_SIMPSON, sum = 0;
    for (int i = 0; i <= JET_SIMPSON; i++) {
        double x = p0 + i * d, u = jet_u(layer, x);
        double g = AT_RADIUS * u * (2 * AT_OMEGA * sin(x) + u * tan(x) / AT_RADIUS);
        sum += g * (i == 0 || i == JET_SIMPSON ? 1 : i % 2 ? 4 : 2);
    }
    return -sum * d / 3;
}

/* Cases 2 and 6 at one point (the jet is set up by rows in case_initial). */
void case_point(const atmos *s, int layer, double lon, double lat, double *u, double *v, double *h)
{
    if (s->tcase == CASE_STEADY)
        steady(s, layer, lon, lat, u, v, h);
    else
        rossby_haurwitz(layer, lon, lat, u, v, h);
}

/* Uniform in [0, 1) from a 64-bit index (splitmix64 of it). */
static double uniform(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull * 0x5a4d5049ull; /* the seed */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (double)(x >> 11) * 0x1.0p-53;
}

/* Galewsky et al.'s localised bump of h: hhat cos(lat) exp(-(lon/alpha)^2)
 * exp(-((pi/4 - lat)/beta)^2), alpha = 1/3, beta = 1/15, -pi < lon < pi. */
static double jet_bump(const atmos *s, double lon, double lat)
{
    double x = lon > AT_PI ? lon - 2 * AT_PI : lon, al = 1.0 / 3, be = 1.0 / 15, y = (AT_PI / 4 - lat) / be;
    return s->bump * cos(lat) * exp(-(x / al) * (x / al)) * exp(-y * y);
}

/* The jet's h at every latitude of one layer, mean JET_H0. */
static void jet_profile(const atmos *s, int layer, double *h)
{
    double mean = 0;
    for (int j = 0; j < s->nlat; j++) {
        h[j] = jet_gh(layer, s->lat[j]) / AT_GRAV;
        mean += s->wt[j] * h[j];
    }
    mean /= 2;
    for (int j = 0; j < s->nlat; j++)
        h[j] += JET_H0 - mean;
}

void case_initial(atmos *s, double *uvphi)
{
    size_t cells = (size_t)s->nrow * (size_t)s->nlon;
    double *prof = at_dalloc(s, (size_t)s->nlat);
    for (int l = 0; l < s->L; l++) {
        if (s->tcase == CASE_JET)
            jet_profile(s, l, prof);
        for (int row = 0; row < s->nrow; row++) {
            int j = s->j0 + row;
            for (int i = 0; i < s->nlon; i++) {
                double u, v, h, lon = 2 * AT_PI * i / s->nlon;
                if (s->tcase == CASE_JET)
                    u = jet_u(l, s->lat[j]), v = 0, h = prof[j] + jet_bump(s, lon, s->lat[j]);
                else
                    case_point(s, l, lon, s->lat[j], &u, &v, &h);
                if (s->perturb > 0) {
                    uint64_t g = ((uint64_t)l * (uint64_t)s->nlat + (uint64_t)j) * (uint64_t)s->nlon + (uint64_t)i;
                    h *= 1 + s->perturb * (2 * uniform(g) - 1);
                }
                size_t o = (size_t)row * s->nlon + i;
                uvphi[(0 * (size_t)s->L + l) * cells + o] = u * s->clat[j];
                uvphi[(1 * (size_t)s->L + l) * cells + o] = v * s->clat[j];
                uvphi[(2 * (size_t)s->L + l) * cells + o] = AT_GRAV * h - s->phibar;
            }
        }
    }
    free(prof);
}

double case_tracer(double lon, double lat)
{
    double lc = 1.5 * AT_PI, tc = AT_PI / 4, R = 1.0 / 3;
    double c = sin(tc) * sin(lat) + cos(tc) * cos(lat) * cos(lon - lc);
    double r = acos(c > 1 ? 1 : c < -1 ? -1 : c);
    return r < R ? 0.5 * (1 + cos(AT_PI * r / R)) : 0;
}

/* Case 2: the exact tracer of layer `layer` at time t (the point rotated
 * back about the flow's axis by u0 t / a, Rodrigues' formula). */
double case_tracer_exact(const atmos *s, int layer, double lon, double lat, double t)
{
    double u0 = 2 * AT_PI * AT_RADIUS / (12 * AT_DAY) * layer_factor(layer), al = s->alpha_deg * AT_PI / 180;
    double ang = -u0 * t / AT_RADIUS, c = cos(ang), sn = sin(ang);
    double k[3] = {-sin(al), 0, cos(al)}, x[3] = {cos(lat) * cos(lon), cos(lat) * sin(lon), sin(lat)};
    double kx = k[0] * x[0] + k[1] * x[1] + k[2] * x[2];
    double cr[3] = {k[1] * x[2] - k[2] * x[1], k[2] * x[0] - k[0] * x[2], k[0] * x[1] - k[1] * x[0]};
    double y[3];
    for (int d = 0; d < 3; d++)
        y[d] = x[d] * c + cr[d] * sn + k[d] * kx * (1 - c);
    double z = y[2] > 1 ? 1 : y[2] < -1 ? -1 : y[2];
    return case_tracer(atan2(y[1], y[0]), asin(z));
}
