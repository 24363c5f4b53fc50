/* ssl.principal.mapping.rules as Kafka reads them: the first rule whose
 * pattern matches the whole name, $n groups, L and U, DEFAULT; no match
 * refused; bad rules refused at start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "core/error.h"
#include "security/principal_rules.h"

static const char *map(const kiq_principal_rules_t *r, const char *dn)
{
    static char out[256];
    return kiq_principal_rules_apply(r, dn, out, sizeof out) == 0 ? out : NULL;
}

static void test_rules(void **state)
{
    (void)state;
    kiq_principal_rules_t *r = kiq_principal_rules_new(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\n"
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L ,"
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, DEFAULT");
    assert_non_null(r);
    assert_string_equal(map(r, "CN=kafka-svc,OU=ServiceUsers,O=Org,C=NL"), "kafka-svc");
    assert_string_equal(map(r, "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US"), "duke@javasoft");
    assert_string_equal(map(r, "OU=x,cn=alice.b"), "ALICE.B");
    assert_string_equal(map(r, "O=nobody"), "O=nobody");
    kiq_principal_rules_free(r);

    /* no DEFAULT: a name no rule takes is refused */
    r = kiq_principal_rules_new("RULE:^CN=([^,]*),.*$/$1/");
    assert_non_null(r);
    assert_string_equal(map(r, "CN=alice,OU=test"), "alice");
    assert_null(map(r, "OU=test"));
    assert_non_null(strstr(kiq_error_get(), "No rules apply"));
    kiq_principal_rules_free(r);

    /* a slash escaped in the pattern, a literal in the replacement */
    r = kiq_principal_rules_new("RULE:^CN=a\\/b$/user-$1x/");
    assert_non_null(r);
    assert_string_equal(map(r, "CN=a/b"), "user-x");
    kiq_principal_rules_free(r);

    r = kiq_principal_rules_new("DEFAULT");
    assert_string_equal(map(r, "CN=x"), "CN=x");
    kiq_principal_rules_free(r);
    static const char *const bad[] = {"", "RULE:abc", "RULE:abc/def", "RULE:(/x/", "MAYBE", "RULE:a/b/, JUNK"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_null(kiq_principal_rules_new(bad[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
