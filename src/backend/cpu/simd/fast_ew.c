/* Fast float32 kernels (see fast_ew.h): one template (fast_ew_impl.h) instantiated for
 * AVX-512, AVX2+FMA and portable C (SSE2 here, SIMD128 under emscripten), chosen at
 * run time by ct_simd_active(). Threads come from ct_cpu_foreach / ct_parallel_for as
 * in the reference kernels. */
#include "fast_ew.h"
#include "fast_norm.h"
#include "../cpu_iter.h"
#include "simd.h"
#include <float.h>
#include <math.h>
#include <stdlib.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

static double log_d(double v) { return log(v); }

/* Phi(x) coefficients (fitted for this file, see phid in fast_ew_impl.h):
 * erf(z)/z ~ sum ERF_Pk z^2k on |z| < 0.8 (relative error ~1e-12), and
 * erfc(z) e^(z^2) ~ sum erfc_q[k] t^k with t = ERFC_USCALE / (1 + z) + ERFC_UOFF
 * on [0.8, 10] (relative error ~3e-10). */
#define ERF_P0 1.1283791670944305
#define ERF_P1 -0.37612638881450083
#define ERF_P2 0.112837909538887
#define ERF_P3 -0.026866080350736614
#define ERF_P4 0.0052234176155631059
#define ERF_P5 -0.00085293681646746785
#define ERF_P6 0.0001169606045096875
#define ERF_P7 -1.1288727057049104e-05
#define ERFC_DEG 12
#define ERFC_USCALE 4.304347826086957
#define ERFC_UOFF -1.3913043478260871
static const double erfc_q[ERFC_DEG + 1] = {0.24573858325621073, 0.22091536227414424, 0.027759502394870073, -0.0048067633364669944, -0.00087173717002431205, 0.00040108782370780168, -1.4399469696515277e-05, -3.0283429549935956e-05, 9.9804096375758514e-06, 1.2164681127116588e-07, -1.1705103619744611e-06, 2.7327297317007389e-07, 3.2070915760028726e-08};

/* gelu's erfc(a) e^(a^2) / t as a polynomial in u = 2.2 / (1 + a) - 1.2 (a in [0, 10]), fitted
 * for this file (least squares on Chebyshev nodes, relative weights; see gelu_erf_vec) */
#define GELU_Q0 8.759760065e-01f
#define GELU_Q1 2.000319674e-01f
#define GELU_Q2 -8.112617784e-02f
#define GELU_Q3 -4.111512418e-03f
#define GELU_Q4 1.433331002e-02f
#define GELU_Q5 -6.010428971e-03f
#define GELU_Q6 3.613192319e-04f
#define GELU_Q7 1.129100975e-03f
#define GELU_Q8 -8.696718520e-04f
#define GELU_Q9 2.986583223e-04f
#define GELU_Q10 6.836703988e-05f
#define GELU_Q11 -1.132483900e-04f
#define GELU_Q12 3.230861245e-05f

#if defined(__x86_64__)
/* gelu (erf form), AVX-512 (gelu_erf_vec): R(y) = Phi(-y) e^(y^2/2) on 32 intervals centred at k/2
 * (k = 0..31), R ~ sum_j gelu_t[j][k] s^j with s = y - k/2 in [-1/4, 1/4], degree 5. Fitted for this
 * file: per interval, least squares on 120 Chebyshev nodes of [-0.255, 0.255] weighted by 1/R and
 * reweighted towards minimax (Lawson), against mpmath's erfc; max relative error 1.5e-7 with the float
 * coefficients evaluated in float (7.6e-8 in exact arithmetic, interval k = 1) */
static const float gelu_t[6][32] __attribute__((aligned(64))) = {
    {0.5, 0.349618852, 0.261578292, 0.20578067, 0.168101996, 0.14133133, 0.121513948, 0.106345154,
     0.094410643, 0.084803395, 0.0769193023, 0.0703426972, 0.0647793114, 0.0600156747, 0.0558934808, 0.0522930957,
     0.0491225459, 0.0463100448, 0.0437987894, 0.04154329, 0.0395066924, 0.037658859, 0.03597489, 0.0344340578,
     0.0330189727, 0.0317149274, 0.0305094142, 0.0293917321, 0.0283526611, 0.0273842253, 0.0264794882, 0.0256323908},
    {-0.398941964, -0.224132836, -0.137363985, -0.0902712792, -0.062738277, -0.045613952, -0.034400437, -0.0267342422,
     -0.0212997161, -0.0173270162, -0.0143457558, -0.0120574636, -0.0102663944, -0.00884039048, -0.00768790348, -0.00674405182,
     -0.00596191082, -0.00530691398, -0.00475318078, -0.00428103982, -0.0038753394, -0.00352426386, -0.00321849459, -0.00295060663,
     -0.00271462742, -0.00250571081, -0.00231989194, -0.00215390348, -0.00200503296, -0.00187101518, -0.00174994546, -0.00164021412},
    {0.249985799, 0.118768834, 0.0621047243, 0.0351859927, 0.0213123746, 0.0136480769, 0.00915625319, 0.00638761884,
     0.00460587349, 0.00341590121, 0.00259525864, 0.0020133201, 0.00159047206, 0.00127656688, 0.00103907892, 0.000856353028,
     0.000713629997, 0.000600635947, 0.000510081765, 0.000436705886, 0.000376650045, 0.000327044079, 0.000285724644, 0.00025104126,
     0.000221720664, 0.000196770401, 0.00017540947, 0.000157017843, 0.000141099124, 0.000127252933, 0.000115153896, 0.000104535888},
    {-0.132741898, -0.0549150184, -0.0250854809, -0.0124969054, -0.00670423592, -0.0038311095, -0.00231048116, -0.00145914883,
     -0.00095871574, -0.000651805371, -0.000456478389, -0.000328061811, -0.000241183676, -0.000180899442, -0.000138115269, -0.000107133535,
     -8.42894078e-05, -6.71690068e-05, -5.41478112e-05, -4.41109187e-05, -3.62794126e-05, -3.01001455e-05, -2.5174355e-05, -2.12105824e-05,
     -1.79930648e-05, -1.5360185e-05, -1.31895404e-05, -1.1387493e-05, -9.88171723e-06, -8.61585522e-06, -7.54562598e-06, -6.6359662e-06},
    {0.0606562719, 0.0231319293, 0.00935491361, 0.00414645951, 0.00199032761, 0.00102370279, 0.000559002394, 0.000321508676,
     0.000193448563, 0.000121067897, 7.84259319e-05, 5.23667295e-05, 3.59156875e-05, 2.52254904e-05, 1.80968946e-05, 1.32317518e-05,
     9.841272e-06, 7.43340979e-06, 5.69381382e-06, 4.41723887e-06, 3.46698357e-06, 2.75032198e-06, 2.20329366e-06, 1.78109178e-06,
     1.45187482e-06, 1.1927134e-06, 9.86891223e-07, 8.22080665e-07, 6.89093326e-07, 5.81011534e-07, 4.92578238e-07, 4.19763154e-07},
    {-0.0198275484, -0.00876901112, -0.00318874465, -0.00127431704, -0.000553483143, -0.000258661341, -0.000128904881, -6.79675941e-05,
     -3.76579846e-05, -2.17954039e-05, -1.31102397e-05, -8.15996282e-06, -5.23548215e-06, -3.45145031e-06, -2.33131414e-06, -1.60951561e-06,
     -1.13335068e-06, -8.12465601e-07, -5.91989817e-07, -4.37798406e-07, -3.28201025e-07, -2.49132e-07, -1.91299364e-07, -1.48460487e-07,
     -1.16353462e-07, -9.20268164e-08, -7.34069872e-08, -5.90202447e-08, -4.78056528e-08, -3.89913417e-08, -3.20097904e-08, -2.64391637e-08},
};
/* gelu, both forms, AVX-512, |x| < 31.5/8 (gelu_tab_vec): the lower tail q(y), y = |x| (Phi(-y), or
 * 1 / (1 + e^(2u)) for the tanh form), on 32 pieces centred at k/8, q ~ sum_j tab[j][k] s^j, s = y - k/8,
 * degree 5; made by tools/fit_gelu_tables.py (weighted least squares towards minimax, against libm's
 * erfc / exp in double) */
/* erf: degree 5, max relative error 1.13e-07 (float coefficients, float FMA Horner) */
static const float gelu_tab_erf[6][32] __attribute__((aligned(64))) = {
    {0.5, 0.450261772, 0.401293665, 0.353830248, 0.308537543, 0.265985519, 0.22662735, 0.190786958,
     0.158655256, 0.130294517, 0.105649777, 0.0845657215, 0.066807203, 0.0520812795, 0.0400591567, 0.0303963609,
     0.0227501318, 0.0167933069, 0.0122244731, 0.00877447519, 0.00620966544, 0.00433244836, 0.00297976332, 0.00202013738,
     0.00134989806, 0.000889025279, 0.000577025057, 0.000369078451, 0.000232629085, 0.000144480728, 8.84172841e-05, 5.33123493e-05},
    {-0.398942292, -0.395837694, -0.386668116, -0.37185508, -0.352065325, -0.328160971, -0.301137418, -0.272055,
     -0.241970718, -0.211876646, -0.182649091, -0.155012265, -0.1295176, -0.106538266, -0.086277321, -0.0687862784,
     -0.0539909676, -0.0417209864, -0.0317396522, -0.0237719007, -0.0175283011, -0.0127241816, -0.00909356214, -0.00639812043,
     -0.00443184841, -0.00302225794, -0.00202904805, -0.00134111883, -0.000872682664, -0.000559061533, -0.000352595671, -0.000218931629},
    {6.10589357e-12, 0.0247398466, 0.0483334959, 0.0697228089, 0.0880163014, 0.102550276, 0.112926506, 0.119024038,
     0.120985344, 0.119180605, 0.114155672, 0.106570937, 0.0971382037, 0.0865623504, 0.0754926652, 0.0644871444,
     0.0539909787, 0.0443285592, 0.0357071161, 0.0282291397, 0.0219103806, 0.0167004913, 0.0125036491, 0.00919729751,
     0.00664777169, 0.0047222767, 0.00329720136, 0.00226313621, 0.001527193, 0.00101329759, 0.000661115686, 0.000424179074},
    {0.0664903596, 0.0649420917, 0.0604168549, 0.053260453, 0.0440081246, 0.0333288088, 0.0219579022, 0.0106271217,
     -1.66560312e-08, -0.00937996153, -0.0171233453, -0.0230096169, -0.0269828085, -0.029131528, -0.029657796, -0.0288400464,
     -0.0269954521, -0.0244458634, -0.0214903671, -0.0183860641, -0.015337253, -0.0124922255, -0.00994608365, -0.00774772698,
     -0.0059091365, -0.004415337, -0.0032338025, -0.00232251757, -0.00163628662, -0.00113123178, -0.000767635007, -0.000511414546},
    {-1.99163863e-09, -0.00614653993, -0.0118198851, -0.0165975858, -0.0201517027, -0.0222798381, -0.0229196865, -0.0221460629,
     -0.0201519448, -0.0172173642, -0.013671387, -0.00985284708, -0.00607513404, -0.0025988447, 0.000385223771, 0.0027624357,
     0.00449103629, 0.00559147261, 0.00613112748, 0.00620730454, 0.0059309355, 0.00541279698, 0.00475326413, 0.00403589336,
     0.00332455733, 0.00266344147, 0.00207908847, 0.00158360496, 0.00117830804, 0.000857251347, 0.000610270654, 0.000425377802},
    {-0.00996505562, -0.00957655534, -0.00845954102, -0.00673205126, -0.00457441574, -0.00220406754, 0.000152452645, 0.00228700181,
     0.0040328484, 0.00528018828, 0.0059826225, 0.00615468388, 0.00586164556, 0.00520479213, 0.0043038195, 0.00328035513,
     0.00224407692, 0.00128305377, 0.000458752911, -0.000194607244, -0.000667248445, -0.000968768087, -0.00112205453, -0.00115725666,
     -0.0011065373, -0.00100020412, -0.000864098605, -0.000718395517, -0.000577405386, -0.00045011242, -0.000341129198, -0.000251803256},
};
/* tanh: degree 5, max relative error 1.09e-07 (float coefficients, float FMA Horner) */
static const float gelu_tab_tanh[6][32] __attribute__((aligned(64))) = {
    {0.5, 0.450262398, 0.401298583, 0.353845954, 0.308571994, 0.266046166, 0.22671926, 0.190911219,
     0.158808008, 0.130466849, 0.105828635, 0.0847355947, 0.0669522807, 0.052187711, 0.0401169248, 0.0304005146,
     0.0227011535, 0.0166966598, 0.0120894797, 0.00861280318, 0.00603370648, 0.00415387098, 0.00280841603, 0.00186339754,
     0.00121246406, 0.000773079984, 0.000482654519, 0.000294823258, 0.000176056477, 0.000102696169, 5.84672198e-05, 3.24614666e-05},
    {-0.398942292, -0.395822525, -0.386610776, -0.371737719, -0.351883769, -0.327926725, -0.300876677, -0.27180469,
     -0.2417721, -0.211767629, -0.182657018, -0.155148551, -0.12977539, -0.106893666, -0.0866936594, -0.0692204088,
     -0.0544002056, -0.0420692414, -0.0320017859, -0.0239356924, -0.0175941139, -0.012702751, -0.00900266785, -0.00625891937,
     -0.00426554354, -0.00284755696, -0.00186061545, -0.00118899497, -0.000742485747, -0.000452711101, -0.000269287208, -0.00015613719},
    {6.26514812e-12, 0.0248588398, 0.04854583, 0.0699813738, 0.0882606134, 0.102717504, 0.112963893, 0.11890021,
     0.120697975, 0.118758284, 0.11365322, 0.106058992, 0.0966896638, 0.086238645, 0.0753332078, 0.0645038933,
     0.0541688837, 0.0446310528, 0.0360848345, 0.0286296327, 0.022286728, 0.0170173738, 0.0127402479, 0.00934717711,
     0.0067164572, 0.00472352328, 0.00324894371, 0.00218390743, 0.00143348845, 0.000918047153, 0.000573170139, 0.000348564907},
    {0.0668194592, 0.065236032, 0.0606110133, 0.0533067845, 0.0438846424, 0.0330457091, 0.0215581805, 0.0101802126,
     -0.000411276298, -0.00967651326, -0.0172470044, -0.022935532, -0.0267240014, -0.0287345741, -0.0291912481, -0.0283790566,
     -0.0266066436, -0.0241759326, -0.0213604234, -0.0183919687, -0.0154548241, -0.0126852216, -0.0101747708, -0.00797616597,
     -0.0061100577, -0.00457225274, -0.00334068621, -0.00238177017, -0.00165586895, -0.00112174288, -0.000739887182, -0.000474784669},
    {-2.05132866e-09, -0.00628494751, -0.0120741902, -0.0169244371, -0.0204915106, -0.0225656237, -0.023089977, -0.0221592188,
     -0.0199976508, -0.0169210304, -0.0132892672, -0.00945888925, -0.00574337784, -0.00238660467, 0.000448829407, 0.00268001924,
     0.00429260498, 0.00532445172, 0.00584809296, 0.00595475314, 0.00574148307, 0.00530184852, 0.00471990136, 0.00406681467,
     0.00339947548, 0.00276045967, 0.00217892695, 0.00167214929, 0.00124744524, 0.000904342276, 0.00063679344, 0.000435279711},
    {-0.0101926569, -0.00978582725, -0.0086152805, -0.00680358848, -0.0045416588, -0.00206470932, 0.000377919438, 0.00255616684,
     0.00428967504, 0.00546890032, 0.00606264174, 0.00611135596, 0.00570938131, 0.00498153362, 0.00405980973, 0.00306477677,
     0.00209378707, 0.00121612754, 0.000473666063, -0.000115045521, -0.000549181132, -0.000840023509, -0.00100616226, -0.00106980943,
     -0.00105416134, -0.000981619814, -0.000872561417, -0.000744534424, -0.000611755007, -0.000484882883, -0.000371074741, -0.000274299266},
};
/* 2^(j/32), j = 0..31, rounded to float: the table of expsm's AVX-512 form (fast_ew_impl.h) */
static const float exp2_t32[32] __attribute__((aligned(64))) = {
    1, 1.0218972, 1.04427373, 1.06714046, 1.09050775, 1.1143868, 1.13878858, 1.1637249,
    1.18920708, 1.21524739, 1.24185777, 1.26905096, 1.29683959, 1.32523668, 1.35425556, 1.38390994,
    1.41421354, 1.44518077, 1.47682619, 1.50916445, 1.54221082, 1.5759809, 1.61049032, 1.64575553,
    1.68179286, 1.71861935, 1.75625217, 1.79470909, 1.8340081, 1.87416768, 1.91520655, 1.95714414};
#endif

/* ---- instantiations ---- */
#if defined(__x86_64__)
#define SFX avx512
#define TGT __attribute__((target("avx512f,avx512dq,avx2,fma")))
#define VB 64
#define VFMA_F(a, b, c) ((__typeof__(a))_mm512_fmadd_ps((__m512)(a), (__m512)(b), (__m512)(c)))
#define VFMA_D(a, b, c) ((__typeof__(a))_mm512_fmadd_pd((__m512d)(a), (__m512d)(b), (__m512d)(c)))
#define VRCP_F(a) ((__typeof__(a))_mm512_rcp14_ps((__m512)(a)))
#define VSTNT(p, v) _mm512_stream_ps((p), (__m512)(v))
#define VMAX_F(a, b) ((__typeof__(a))_mm512_max_ps((__m512)(a), (__m512)(b)))
#define VMIN_F(a, b) ((__typeof__(a))_mm512_min_ps((__m512)(a), (__m512)(b)))
#define VBLENDS_F(s, a, b) \
  ((__typeof__(a))_mm512_mask_blend_ps(_mm512_movepi32_mask((__m512i)(s)), (__m512)(a), (__m512)(b)))
#define VSCALEF_F(a, n) ((__typeof__(a))_mm512_scalef_ps((__m512)(a), (__m512)(n)))
#define VFMA_FUSED 1 /* VFMA_F rounds once (exact products through it) */
#include "fast_ew_impl.h"
#undef SFX
#undef TGT
#undef VB
#undef VFMA_F
#undef VFMA_D
#undef VRCP_F
#undef VSTNT
#undef VMAX_F
#undef VMIN_F
#undef VBLENDS_F
#undef VSCALEF_F
#undef VFMA_FUSED

#define SFX avx2
#define TGT __attribute__((target("avx2,fma")))
#define VB 32
#define VFMA_F(a, b, c) ((__typeof__(a))_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#define VFMA_D(a, b, c) ((__typeof__(a))_mm256_fmadd_pd((__m256d)(a), (__m256d)(b), (__m256d)(c)))
#define VRCP_F(a) ((__typeof__(a))_mm256_rcp_ps((__m256)(a)))
#define VSTNT(p, v) _mm256_stream_ps((p), (__m256)(v))
#define VMAX_F(a, b) ((__typeof__(a))_mm256_max_ps((__m256)(a), (__m256)(b)))
#define VMIN_F(a, b) ((__typeof__(a))_mm256_min_ps((__m256)(a), (__m256)(b)))
#define VBLENDS_F(s, a, b) ((__typeof__(a))_mm256_blendv_ps((__m256)(a), (__m256)(b), (__m256)(s)))
#define VFMA_FUSED 1
#include "fast_ew_impl.h"
#undef SFX
#undef TGT
#undef VB
#undef VFMA_F
#undef VFMA_D
#undef VRCP_F
#undef VSTNT
#undef VMAX_F
#undef VMIN_F
#undef VBLENDS_F
#undef VFMA_FUSED
#endif

#define SFX c
#define TGT
#define VB 16
#define VFMA_F(a, b, c) ((a) * (b) + (c))
#define VFMA_D(a, b, c) ((a) * (b) + (c))
#define VRCP_F(a) (1.0f / (a))
#define VBLENDS_F(s, a, b) F(self)((vi)(s) >> 31, (b), (a)) /* vi, F: the template's */
#if defined(__x86_64__)
#define VSTNT(p, v) _mm_stream_ps((p), (__m128)(v))
#define VMAX_F(a, b) ((__typeof__(a))_mm_max_ps((__m128)(a), (__m128)(b)))
#define VMIN_F(a, b) ((__typeof__(a))_mm_min_ps((__m128)(a), (__m128)(b)))
#elif defined(__wasm_simd128__)
/* clang turns the selects below into f32x4.max/min, whose NaN/-0 rules V8 emulates in several
 * instructions each (expf 4.5-6 ns/element in Node 20); pmax/pmin are the plain select, one
 * maxps/minps: a > b ? a : b is pmax(b, a) (1.0 ns/element) */
#include <wasm_simd128.h>
#define VMAX_F(a, b) ((__typeof__(a))wasm_f32x4_pmax((v128_t)(b), (v128_t)(a)))
#define VMIN_F(a, b) ((__typeof__(a))wasm_f32x4_pmin((v128_t)(b), (v128_t)(a)))
#define VSTNT(p, v)                 \
  do {                              \
    __typeof__(v) nt_ = (v);        \
    memcpy((p), &nt_, sizeof nt_);  \
  } while (0)
#else
#define VMAX_F(a, b) F(self)((a) > (b), (a), (b))
#define VMIN_F(a, b) F(self)((a) < (b), (a), (b))
/* WebAssembly has no non-temporal store: a plain one */
#define VSTNT(p, v)                 \
  do {                              \
    __typeof__(v) nt_ = (v);        \
    memcpy((p), &nt_, sizeof nt_);  \
  } while (0)
#endif
#include "fast_ew_impl.h"
#undef SFX
#undef TGT
#undef VB
#undef VFMA_F
#undef VFMA_D
#undef VRCP_F
#undef VSTNT
#undef VMAX_F
#undef VMIN_F
#undef VBLENDS_F

/* ---- dispatch ---- */
/* ---- non-temporal stores ---- */
/* Outputs of at least this many bytes (per call / per tensor) are written with NT stores:
 * 4 MiB is above a core's L2 (1-2 MiB on current x86) and a large share of a small L3, so
 * such an output would mostly be evicted before the next op reads it anyway. */
static int64_t nt_min_bytes = (int64_t)4 << 20;
void ct_fast_set_nt_min_bytes(int64_t bytes) { __atomic_store_n(&nt_min_bytes, bytes, __ATOMIC_RELAXED); }
bool ct_fast_nt_wanted(int64_t out_bytes) { return out_bytes >= __atomic_load_n(&nt_min_bytes, __ATOMIC_RELAXED); }
/* NT stores are weakly ordered: fence them before the thread pool's join publishes the
 * output to other threads */
void ct_fast_nt_fence(void) {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

#if defined(__wasm_simd128__)
/* GELU (erf form) in a function of its own: V8 leaves unary_c (every op's loop in one large
 * function) in its baseline tier, where GELU ran at 5.4 ns per float against 3.7 for this
 * wrapper (Node 20, session 4); flatten inlines unary_c and the constant op folds its switch */
__attribute__((noinline, flatten)) static void unary_gelu_erf_wasm(const float *x, float *y, int64_t n, int nt) {
  unary_c(CT_OP_gelu, 0, x, y, n, nt);
}
#endif
static void k_unary(int op, int gt, const float *x, float *y, int64_t n) {
  int nt = ct_fast_nt_wanted(n * 4);
#if defined(__wasm_simd128__)
  if (op == CT_OP_gelu && !gt) {
    unary_gelu_erf_wasm(x, y, n, nt);
    if (nt) ct_fast_nt_fence();
    return;
  }
#endif
#if defined(__x86_64__)
  ct_simd_isa l = ct_simd_active();
  if (l == CT_SIMD_AVX512) unary_avx512(op, gt, x, y, n, nt);
  else if (l == CT_SIMD_AVX2) unary_avx2(op, gt, x, y, n, nt);
  else
#endif
    unary_c(op, gt, x, y, n, nt);
  if (nt) ct_fast_nt_fence();
}
static void k_binary(int op, const float *a, int sa, const float *b, int sb, float *y, int64_t n) {
  int nt = ct_fast_nt_wanted(n * 4);
#if defined(__x86_64__)
  ct_simd_isa l = ct_simd_active();
  if (l == CT_SIMD_AVX512) binary_avx512(op, a, sa, b, sb, y, n, nt);
  else if (l == CT_SIMD_AVX2) binary_avx2(op, a, sa, b, sb, y, n, nt);
  else
#endif
    binary_c(op, a, sa, b, sb, y, n, nt);
  if (nt) ct_fast_nt_fence();
}
static double k_sum(const float *x, int64_t n) {
#if defined(__x86_64__)
  ct_simd_isa l = ct_simd_active();
  if (l == CT_SIMD_AVX512) return sum_avx512(x, n);
  if (l == CT_SIMD_AVX2) return sum_avx2(x, n);
#endif
  return sum_c(x, n);
}
static float k_minmax(const float *x, int64_t n, int sign) {
#if defined(__x86_64__)
  ct_simd_isa l = ct_simd_active();
  if (l == CT_SIMD_AVX512) return minmax_avx512(x, n, sign);
  if (l == CT_SIMD_AVX2) return minmax_avx2(x, n, sign);
#endif
  return minmax_c(x, n, sign);
}
/* the fused row kernels (fast_norm.h) */
#if defined(__x86_64__)
#define PICK(fn, ...)                                                   \
  do {                                                                  \
    ct_simd_isa l_ = ct_simd_active();                                  \
    if (l_ == CT_SIMD_AVX512) return fn##_avx512(__VA_ARGS__);          \
    if (l_ == CT_SIMD_AVX2) return fn##_avx2(__VA_ARGS__);              \
    return fn##_c(__VA_ARGS__);                                         \
  } while (0)
#else
#define PICK(fn, ...) return fn##_c(__VA_ARGS__)
#endif
static void k_softmax_row2(const float *x, float *y, int64_t n, int log, int nt, const float *pf) {
  PICK(softmax_row2, x, y, n, log, nt, pf);
}
static void k_softmax_rows_nt(const float *x, float *y, int64_t rows, int64_t n, int log, int64_t ahead) {
  PICK(softmax_rows_nt, x, y, rows, n, log, ahead);
}
void ct_fast_norm_fwd_row(const float *x, const float *w, const float *b, float *y, int64_t n, double eps, int rms,
                          float *mean, float *rstd, int nt, const float *next) {
  PICK(norm_fwd_row, x, w, b, y, n, eps, rms, mean, rstd, nt, next);
}
/* whole vectors per row and an aligned output: the interleaved kernel; else false */
bool ct_fast_norm_fwd_rows_nt(const float *x, const float *w, const float *b, float *y, int64_t rows, int64_t n,
                              double eps, int rms, float *mean, float *rstd, int64_t ahead) {
  ct_simd_isa l = ct_simd_active();
  int64_t nf = l == CT_SIMD_AVX512 ? 16 : l == CT_SIMD_AVX2 ? 8 : 4;
  if (rows < 1 || n < nf || n % nf || ((uintptr_t)y & (uintptr_t)(nf * 4 - 1))) return false;
#if defined(__x86_64__)
  if (l == CT_SIMD_AVX512) norm_fwd_rows_nt_avx512(x, w, b, y, rows, n, eps, rms, mean, rstd, ahead);
  else if (l == CT_SIMD_AVX2) norm_fwd_rows_nt_avx2(x, w, b, y, rows, n, eps, rms, mean, rstd, ahead);
  else
#endif
    norm_fwd_rows_nt_c(x, w, b, y, rows, n, eps, rms, mean, rstd, ahead);
  return true;
}
void ct_fast_norm_bwd_row(const float *x, const float *g, const float *w, float mean, float rstd, float *dx, float *dw,
                          float *db, int64_t n, int rms, int nt) {
  PICK(norm_bwd_row, x, g, w, mean, rstd, dx, dw, db, n, rms, nt);
}
double ct_fast_lse_row(const float *x, const float *w, int64_t n, double *sx) { PICK(lse_row, x, w, n, sx); }
void ct_fast_ce_bwd_row(const float *x, const float *w, float *dx, int64_t n, float lse, float ca, float cb) {
  PICK(ce_bwd_row, x, w, dx, n, lse, ca, cb);
}
#undef PICK

static void k_moments_row(const float *x, int64_t n, double *mean, double *var) {
#if defined(__x86_64__)
  ct_simd_isa l = ct_simd_active();
  if (l == CT_SIMD_AVX512) return moments_row_avx512(x, n, mean, var);
  if (l == CT_SIMD_AVX2) return moments_row_avx2(x, n, mean, var);
#endif
  moments_row_c(x, n, mean, var);
}

/* ---- elementwise loops ---- */
bool ct_fast_unary_loop_f32(int op, const ct_attrs *a, char **p, const int64_t *s, int64_t n) {
  if (s[0] != 4 || s[1] != 4) return false;
  switch (op) {
    case CT_OP_neg: case CT_OP_exp: case CT_OP_relu: case CT_OP_sigmoid: case CT_OP_silu: case CT_OP_tanh:
    case CT_OP_gelu: break;
    default: return false;
  }
  if (!ct_fast_enabled()) return false;
  k_unary(op, op == CT_OP_gelu && a->k[0] != 0, (const float *)p[1], (float *)p[0], n);
  return true;
}

static void k_add_alpha(const float *a, const float *b, double al, float *y, int64_t n) {
#if defined(__x86_64__)
  ct_simd_isa l = ct_simd_active();
  if (l == CT_SIMD_AVX512) add_alpha_avx512(a, b, al, y, n);
  else if (l == CT_SIMD_AVX2) add_alpha_avx2(a, b, al, y, n);
  else
#endif
    add_alpha_c(a, b, al, y, n);
}

/* add/sub with alpha on float32: x + alpha y in double rounded once, as the reference loop (sub:
 * alpha negated, exact); only full rows (a broadcast operand keeps the reference loop) */
static bool fast_add_alpha(int op, const ct_attrs *a, char **p, const int64_t *s, int64_t n) {
  if (s[0] != 4 || s[1] != 4 || s[2] != 4 || !ct_fast_enabled()) return false;
  k_add_alpha((const float *)p[1], (const float *)p[2], op == CT_OP_sub ? -a->f[0] : a->f[0], (float *)p[0], n);
  return true;
}

bool ct_fast_binary_loop_f32(int op, const ct_attrs *a, char **p, const int64_t *s, int64_t n) {
  if ((op == CT_OP_add || op == CT_OP_sub) && a->f[0] != 1.0) return fast_add_alpha(op, a, p, s, n);
  if (s[0] != 4 || (s[1] != 4 && s[1] != 0) || (s[2] != 4 && s[2] != 0)) return false;
  bool ok = ((op == CT_OP_add || op == CT_OP_sub) && a->f[0] == 1.0) || op == CT_OP_mul ||
            (op == CT_OP_div && a->k[0] == 0);
  if (!ok || !ct_fast_enabled()) return false;
  k_binary(op, (const float *)p[1], s[1] != 0, (const float *)p[2], s[2] != 0, (float *)p[0], n);
  return true;
}

/* ---- reductions ---- */
void ct_rk_out_strides(const ct_tensor *t, int in_ndim, uint32_t mask, int64_t *outer); /* kernels_reduce.c */

typedef struct {
  int op;
  const char *in;
  char *out;
  ct_reduce_geom g;
  int64_t out_stride[CT_MAX_DIMS];
  int64_t inner;
  /* one long row split into fixed blocks (deterministic whatever the thread count) */
  const float *row;
  double *part;
  float *partf;
  int64_t block;
} fr_ctx;

static inline bool fr_is_sum(int op) { return op == CT_OP_sum; }
static inline int fr_sign(int op) { return (op == CT_OP_amax || op == CT_OP_max) ? 1 : -1; }

static void fr_rows(void *vctx, int64_t begin, int64_t end) {
  fr_ctx *x = vctx;
  for (int64_t o = begin; o < end; o++) {
    const float *src = (const float *)(x->in + ct_geom_offset(x->g.n_outer, x->g.outer_shape, x->g.outer_stride, o));
    float *dst = (float *)(x->out + ct_geom_offset(x->g.n_outer, x->g.outer_shape, x->out_stride, o));
    *dst = fr_is_sum(x->op) ? (float)k_sum(src, x->inner) : k_minmax(src, x->inner, fr_sign(x->op));
  }
}
static void fr_blocks(void *vctx, int64_t begin, int64_t end) {
  fr_ctx *x = vctx;
  for (int64_t b = begin; b < end; b++) {
    int64_t i0 = b * x->block, len = x->inner - i0 < x->block ? x->inner - i0 : x->block;
    if (fr_is_sum(x->op)) x->part[b] = k_sum(x->row + i0, len);
    else x->partf[b] = k_minmax(x->row + i0, len, fr_sign(x->op));
  }
}

bool ct_fast_reduce(const ct_call *c, ct_status *st) {
  int op = c->op;
  if (op != CT_OP_sum && op != CT_OP_amax && op != CT_OP_amin && op != CT_OP_max && op != CT_OP_min) return false;
  if (c->n_out != 1 || c->in[0]->dtype != CT_FLOAT32 || c->out[0]->dtype != CT_FLOAT32) return false;
  if (!ct_fast_enabled()) return false;
  fr_ctx x;
  memset(&x, 0, sizeof x);
  x.op = op;
  uint32_t mask = (uint32_t)c->a.k[0];
  ct_reduce_geom_make(c->in[0], mask, &x.g);
  if (x.g.inner_numel < 1 || x.g.outer_numel < 1) return false;
  /* the reduced dims must form one contiguous block (size-1 dims do not matter) */
  int64_t expect = 4;
  for (int d = x.g.n_inner - 1; d >= 0; d--) {
    if (x.g.inner_shape[d] == 1) continue;
    if (x.g.inner_stride[d] != expect) return false;
    expect *= x.g.inner_shape[d];
  }
  x.inner = x.g.inner_numel;
  x.in = ct_cpu_ptr(c->in[0]);
  x.out = ct_cpu_ptr(c->out[0]);
  ct_rk_out_strides(c->out[0], c->in[0]->ndim, mask, x.out_stride);
  const int64_t BLOCK = 1 << 16;
  if (x.g.outer_numel == 1 && x.inner > 2 * BLOCK) {
    int64_t nb = (x.inner + BLOCK - 1) / BLOCK;
    x.block = BLOCK;
    x.row = (const float *)x.in;
    x.part = malloc(sizeof(double) * (size_t)nb);
    x.partf = malloc(sizeof(float) * (size_t)nb);
    if (!x.part || !x.partf) {
      free(x.part);
      free(x.partf);
      *st = CT_ERR(CT_ERR_OOM, "out of memory in %s", ct_op_info_of(op)->id);
      return true;
    }
    ct_parallel_for(nb, 4, fr_blocks, &x);
    float *dst = (float *)x.out;
    if (fr_is_sum(op)) {
      double s = 0;
      for (int64_t b = 0; b < nb; b++) s += x.part[b];
      *dst = (float)s;
    } else {
      *dst = k_minmax(x.partf, nb, fr_sign(op));
    }
    free(x.part);
    free(x.partf);
    *st = CT_OK;
    return true;
  }
  int64_t grain = x.inner > 8192 ? 1 : 8192 / x.inner + 1;
  ct_parallel_for(x.g.outer_numel, grain, fr_rows, &x);
  *st = CT_OK;
  return true;
}

/* ---- softmax / log_softmax over the last dim ---- */
typedef struct {
  const float *x;
  float *y;
  int64_t len;
  int log, nt;
} fs_ctx;
/* ~8 KiB ahead, in whole rows (one row of 1024 floats: 8192 / 4097): on machine A, 4-32 KiB ahead
 * measured the same for 16M-float softmax; on the session-7 VM 1, 2, 4 and 8 rows ahead, with
 * prefetcht0/t1/t2/nta, measured the same within its noise (none at all was slower) */
#ifndef CT_PF_ROW_BYTES
#define CT_PF_ROW_BYTES 8192
#endif
int64_t ct_fast_pf_rows(int64_t n) {
  int64_t r = CT_PF_ROW_BYTES / (n * 4 + 1);
  return r < 1 ? 1 : r > 16 ? 16 : r;
}
static void fs_rows(void *vctx, int64_t begin, int64_t end) {
  fs_ctx *s = vctx;
  int64_t ahead = ct_fast_pf_rows(s->len);
  /* streamed output, whole aligned vectors per row: the interleaved kernel (softmax_rows_nt) */
  int64_t vb = ct_simd_active() == CT_SIMD_AVX512 ? 16 : ct_simd_active() == CT_SIMD_AVX2 ? 8 : 4;
  if (s->nt && s->len % vb == 0 && s->len <= 2048 /* SM_SCR */ && ((uintptr_t)(s->y + begin * s->len) & (uintptr_t)(vb * 4 - 1)) == 0) {
    k_softmax_rows_nt(s->x + begin * s->len, s->y + begin * s->len, end - begin, s->len, s->log, ahead);
    ct_fast_nt_fence();
    return;
  }
  for (int64_t r = begin; r < end; r++) /* a later row of this range is prefetched meanwhile */
    k_softmax_row2(s->x + r * s->len, s->y + r * s->len, s->len, s->log, s->nt,
                   r + ahead < end ? s->x + (r + ahead) * s->len : NULL);
  if (s->nt) ct_fast_nt_fence();
}

bool ct_fast_softmax(const ct_call *c, ct_status *st) {
  const ct_tensor *x = c->in[0], *y = c->out[0];
  if (x->dtype != CT_FLOAT32 || y->dtype != CT_FLOAT32 || x->ndim < 1) return false;
  int d = (int)c->a.k[0];
  for (int k = d + 1; k < x->ndim; k++)
    if (x->shape[k] != 1) return false; /* the reduced dim must be the innermost */
  if (!ct_is_contiguous(x) || !ct_is_contiguous(y) || ct_numel(x) == 0) return false;
  if (!ct_fast_enabled()) return false;
  fs_ctx s = {(const float *)ct_cpu_ptr(x), (float *)ct_cpu_ptr(y), x->shape[d], c->op == CT_OP_log_softmax,
              ct_fast_nt_wanted(ct_numel(y) * 4)};
  int64_t rows = ct_numel(x) / s.len;
  ct_parallel_for(rows, 1 + 16384 / (s.len + 1), fs_rows, &s);
  *st = CT_OK;
  return true;
}

/* ---- mean and biased variance over the trailing dims ---- */
typedef struct {
  const float *x;
  float *mean, *var;
  int64_t inner;
} fm_ctx;
static void fm_rows(void *vctx, int64_t begin, int64_t end) {
  fm_ctx *m = vctx;
  for (int64_t r = begin; r < end; r++) {
    double mu, v;
    k_moments_row(m->x + r * m->inner, m->inner, &mu, &v);
    m->mean[r] = (float)mu;
    m->var[r] = (float)v;
  }
}

bool ct_fast_norm_moments(const ct_call *c, ct_status *st) {
  const ct_tensor *x = c->in[0];
  if (x->dtype != CT_FLOAT32 || c->n_out != 2 || c->out[0]->dtype != CT_FLOAT32 || c->out[1]->dtype != CT_FLOAT32)
    return false;
  uint32_t mask = (uint32_t)c->a.k[0];
  int64_t inner = 1, outer = 1;
  bool seen_red = false;
  for (int d = 0; d < x->ndim; d++) {
    bool red = (mask >> d) & 1;
    if (!red && seen_red && x->shape[d] != 1) return false; /* reduced dims must be trailing */
    if (red) {
      seen_red = true;
      inner *= x->shape[d];
    } else {
      outer *= x->shape[d];
    }
  }
  if (inner < 1 || outer < 1 || !ct_is_contiguous(x) || !ct_is_contiguous(c->out[0]) || !ct_is_contiguous(c->out[1]))
    return false;
  if (!ct_fast_enabled()) return false;
  fm_ctx m = {(const float *)ct_cpu_ptr(x), (float *)ct_cpu_ptr(c->out[0]), (float *)ct_cpu_ptr(c->out[1]), inner};
  ct_parallel_for(outer, 1 + 16384 / (inner + 1), fm_rows, &m);
  *st = CT_OK;
  return true;
}
