/* The one JSON writer (src/base/json.h): what it writes is valid JSON that
 * cJSON reads back to the same values; commas, escapes, exact integers,
 * fixed-point, doubles that round-trip; the buffer sink's truncation and
 * size query; misuse marks the document bad. No Vulkan. */
#include "check.h"

#include "base/json.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static char out[4096];

static cJSON *parse(const char *text)
{
    cJSON *r = cJSON_Parse(text);
    if (r == NULL) {
        fprintf(stderr, "not JSON: %s\n", text);
    }
    return r;
}

static void test_document(void)
{
    check_case = "document";
    vkprof_json j;
    vkprof__json_to_buffer(&j, out, sizeof out);
    vkprof__json_obj(&j);
    vkprof__json_kv_str(&j, "name", "a \"quoted\"\\ \n\t\r\x01\x1f tab \xc3\xa9");
    vkprof__json_kv_u64(&j, "max", UINT64_MAX);
    vkprof__json_kv_i64(&j, "min", INT64_MIN);
    vkprof__json_kv_i64(&j, "neg", -42);
    vkprof__json_kv_u64(&j, "zero", 0);
    vkprof__json_kv_bool(&j, "yes", true);
    vkprof__json_kv_f64(&j, "third", 1.0 / 3.0);
    vkprof__json_kv_f64(&j, "int_double", 4096.0);
    vkprof__json_kv_f64(&j, "nan", NAN);
    vkprof__json_key(&j, "us");
    vkprof__json_fixed(&j, 1234567, 3);
    vkprof__json_key(&j, "us_small");
    vkprof__json_fixed(&j, 7, 3);
    vkprof__json_key(&j, "us_neg");
    vkprof__json_fixed(&j, -1005, 3);
    vkprof__json_key(&j, "list");
    vkprof__json_arr(&j);
    for (int i = 0; i < 3; i++) {
        vkprof__json_u64(&j, (uint64_t)i);
    }
    vkprof__json_obj(&j);
    vkprof__json_end(&j);
    vkprof__json_arr(&j);
    vkprof__json_end(&j);
    vkprof__json_null(&j);
    vkprof__json_end(&j);
    vkprof__json_key(&j, "raw");
    vkprof__json_raw(&j, "{\"x\":1}");
    vkprof__json_end(&j);
    CHECK(vkprof__json_ok(&j));
    CHECK_EQ_U64(vkprof__json_len(&j), strlen(out));

    cJSON *r = parse(out);
    CHECK(r != NULL);
    if (r == NULL) {
        return;
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name");
    CHECK(cJSON_IsString(name) &&
          strcmp(name->valuestring, "a \"quoted\"\\ \n\t\r\x01\x1f tab \xc3\xa9") == 0);
    /* integers beyond 2^53 are exact in the text (cJSON reads doubles) */
    CHECK(strstr(out, "\"max\":18446744073709551615") != NULL);
    CHECK(strstr(out, "\"min\":-9223372036854775808") != NULL);
    CHECK(strstr(out, "\"neg\":-42,") != NULL);
    CHECK(strstr(out, "\"zero\":0,") != NULL);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "yes")));
    CHECK(cJSON_GetObjectItemCaseSensitive(r, "third")->valuedouble == 1.0 / 3.0);
    CHECK(strstr(out, "\"int_double\":4096,") != NULL);
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r, "nan")));
    CHECK(strstr(out, "\"us\":1234.567,") != NULL);
    CHECK(strstr(out, "\"us_small\":0.007,") != NULL);
    CHECK(strstr(out, "\"us_neg\":-1.005,") != NULL);
    CHECK(strstr(out, "\"list\":[0,1,2,{},[],null]") != NULL);
    const cJSON *raw = cJSON_GetObjectItemCaseSensitive(r, "raw");
    CHECK(cJSON_GetObjectItemCaseSensitive(raw, "x") != NULL);
    cJSON_Delete(r);
}

static void test_doubles_round_trip(void)
{
    check_case = "doubles";
    const double v[] = {0.1,           -2.5e-300,          1e300, DBL_MAX, DBL_MIN,
                        123456789.125, 9007199254740993.0, -0.0,  52.08};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        vkprof_json j;
        vkprof__json_to_buffer(&j, out, sizeof out);
        vkprof__json_f64(&j, v[i]);
        CHECK(vkprof__json_ok(&j));
        double back = strtod(out, NULL);
        CHECK(back == v[i]);
        if (back != v[i]) {
            fprintf(stderr, "  %.17g written as %s\n", v[i], out);
        }
    }
}

static void test_buffer(void)
{
    check_case = "buffer";
    vkprof_json j;
    /* a size query, then a buffer cut short: always NUL-terminated */
    vkprof__json_to_buffer(&j, NULL, 0);
    vkprof__json_arr(&j);
    vkprof__json_str(&j, "0123456789");
    vkprof__json_end(&j);
    size_t need = vkprof__json_len(&j);
    CHECK_EQ_U64(need, strlen("[\"0123456789\"]"));
    char small[6];
    memset(small, 'x', sizeof small);
    vkprof__json_to_buffer(&j, small, sizeof small);
    vkprof__json_arr(&j);
    vkprof__json_str(&j, "0123456789");
    vkprof__json_end(&j);
    CHECK_EQ_U64(vkprof__json_len(&j), need);
    CHECK(memcmp(small, "[\"012", 6) == 0); /* 5 bytes and the NUL */
}

static void test_misuse(void)
{
    check_case = "misuse";
    vkprof_json j;
    vkprof__json_to_buffer(&j, out, sizeof out);
    vkprof__json_obj(&j);
    vkprof__json_u64(&j, 1); /* a value with no key */
    vkprof__json_end(&j);
    CHECK(!vkprof__json_ok(&j));

    vkprof__json_to_buffer(&j, out, sizeof out);
    vkprof__json_arr(&j);
    vkprof__json_key(&j, "k"); /* a key in an array */
    vkprof__json_end(&j);
    CHECK(!vkprof__json_ok(&j));

    vkprof__json_to_buffer(&j, out, sizeof out);
    vkprof__json_obj(&j); /* left open */
    CHECK(!vkprof__json_ok(&j));

    vkprof__json_to_buffer(&j, out, sizeof out);
    vkprof__json_end(&j); /* nothing open */
    CHECK(!vkprof__json_ok(&j));

    vkprof__json_to_buffer(&j, out, sizeof out);
    for (int i = 0; i < VKPROF_JSON_MAX_DEPTH + 1; i++) {
        vkprof__json_arr(&j);
    }
    CHECK(!vkprof__json_ok(&j));

    vkprof__json_to_buffer(&j, out, sizeof out);
    vkprof__json_obj(&j);
    vkprof__json_key(&j, "k"); /* a key and no value */
    vkprof__json_end(&j);
    CHECK(!vkprof__json_ok(&j));
}

static void test_integers(void)
{
    check_case = "integers";
    const uint64_t v[] = {0, 9, 10, 99, 100, 1000000007, 1ull << 53, (1ull << 63) + 5, UINT64_MAX};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char d[21] = {0};
        size_t n = vkprof__u64_to_dec(v[i], d);
        char ref[32];
        snprintf(ref, sizeof ref, "%" PRIu64, v[i]);
        CHECK(n == strlen(ref) && memcmp(d, ref, n) == 0);
    }
}

int main(void)
{
    test_document();
    test_doubles_round_trip();
    test_buffer();
    test_misuse();
    test_integers();
    if (check_failures) {
        fprintf(stderr, "test_json: %d failure(s)\n", check_failures);
        return 1;
    }
    printf("test_json: ok\n");
    return 0;
}
