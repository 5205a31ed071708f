/* ct_dict: order, replacement, lookup at scale, metadata. */
#include "test.h"

TEST(dict_basic) {
  ct_dict *d = ct_dict_new();
  ct_tensor *a = ct_ones(0, NULL, ct_opts()), *b = ct_zeros(0, NULL, ct_opts());
  CHECK_OK(ct_dict_set(d, "w", a));
  CHECK_OK(ct_dict_set(d, "b", b));
  CHECK(ct_dict_len(d) == 2);
  CHECK(!strcmp(ct_dict_name(d, 1), "b"));
  CHECK(ct_dict_get(d, "w") == a);
  CHECK_OK(ct_dict_set(d, "w", b)); /* replace keeps order */
  CHECK(ct_dict_get(d, "w") == b && ct_dict_len(d) == 2 && !strcmp(ct_dict_name(d, 0), "w"));
  CHECK(ct_dict_get(d, "missing") == NULL);
  CHECK_OK(ct_dict_remove(d, "w"));
  CHECK(ct_dict_len(d) == 1 && ct_dict_get(d, "b") == b && ct_dict_get(d, "w") == NULL);
  CHECK_ERR(ct_dict_remove(d, "w"), "no entry");
  CHECK_OK(ct_dict_set_meta(d, "format", "pt"));
  CHECK(!strcmp(ct_dict_get_meta(d, "format"), "pt"));
  ct_dict_free(d);
  ct_release(a);
  ct_release(b);
}

TEST(dict_many) {
  ct_dict *d = ct_dict_new();
  ct_tensor *t = ct_ones(0, NULL, ct_opts());
  char name[32];
  for (int i = 0; i < 5000; i++) {
    snprintf(name, sizeof name, "layer.%d.weight", i);
    CHECK_OK(ct_dict_set(d, name, t));
  }
  CHECK(ct_dict_len(d) == 5000);
  CHECK(ct_dict_get(d, "layer.4321.weight") == t);
  CHECK(!strcmp(ct_dict_name(d, 4321), "layer.4321.weight"));
  ct_dict_free(d);
  ct_release(t);
}

/* The dict keeps a tensor alive after its creator releases it inside a scope. */
TEST(dict_holds_across_scope) {
  ct_dict *d = ct_dict_new();
  ct_scope *s = ct_scope_begin();
  ct_tensor *t = ct_ones(0, NULL, ct_opts());
  CHECK_OK(ct_dict_set(d, "t", t));
  ct_release(t); /* the creator's reference, released early */
  CHECK_OK(ct_scope_end(s));
  double v = 0;
  CHECK_OK(ct_item_double(ct_dict_get(d, "t"), &v));
  CHECK(v == 1.0);
  ct_dict_free(d);
}
