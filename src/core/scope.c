/* Scopes: every handle created inside one is recorded, and the scope owns the
 * creator's reference: ct_scope_end releases it unless the handle was kept. A
 * handle whose last reference is released early leaves its scope. */
#include "internal.h"
#include <stdio.h>
#include <stdlib.h>

struct ct_scope {
  struct ct_scope *parent;
  ct_tensor **slot;
  int64_t n, cap, live;
};

static _Thread_local ct_scope *current = NULL;

ct_scope *ct_scope_begin(void) {
  ct_scope *s = ct_xcalloc(1, sizeof *s);
  if (!s) return NULL;
  s->parent = current;
  current = s;
  return s;
}

static void scope_add(ct_scope *s, ct_tensor *t) {
  if (s->n == s->cap) {
    /* compact first: training loops release most temporaries early */
    if (s->live < s->n / 2) {
      int64_t j = 0;
      for (int64_t i = 0; i < s->n; i++)
        if (s->slot[i]) {
          s->slot[j] = s->slot[i];
          s->slot[j]->scope_slot = j;
          j++;
        }
      s->n = j;
    }
    if (s->n == s->cap) {
      int64_t cap = s->cap ? s->cap * 2 : 64;
      ct_tensor **p = realloc(s->slot, (size_t)cap * sizeof *p);
      if (!p) return; /* out of memory: the handle simply stays unscoped */
      s->slot = p;
      s->cap = cap;
    }
  }
  s->slot[s->n] = t;
  t->scope = s;
  t->scope_slot = s->n++;
  s->live++;
}

bool ct_scope_active(void) { return current != NULL; }

void ct_scope_register(ct_tensor *t) {
  if (current) scope_add(current, t);
}

void ct_scope_unregister(ct_tensor *t) {
  ct_scope *s = t->scope;
  if (!s) return;
  s->slot[t->scope_slot] = NULL;
  s->live--;
  t->scope = NULL;
  t->scope_slot = -1;
}

ct_status ct_scope_end(ct_scope *s) {
  if (!s) return CT_ERR(CT_ERR_VALUE, "ct_scope_end: NULL scope");
  if (s != current) return CT_ERR(CT_ERR_RUNTIME, "ct_scope_end: scopes must end in the reverse order they began");
  /* release in reverse creation order; a release may create nothing, so slots stay stable */
  for (int64_t i = s->n - 1; i >= 0; i--) {
    ct_tensor *t = s->slot[i];
    if (t) {
      ct_scope_unregister(t);
      ct_release(t);
    }
  }
  current = s->parent;
  free(s->slot);
  free(s);
  return CT_OK;
}

/* End a scope on a failure path: the scope's releases must not replace the error of the op
 * that failed, so its status and message are kept across them. Returns that status. */
ct_status ct_scope_end_failed(ct_scope *s) {
  char msg[1024];
  ct_status st = ct_last_status();
  snprintf(msg, sizeof msg, "%s", ct_last_error());
  ct_scope_end(s);
  if (st == CT_OK) st = CT_ERR_RUNTIME;
  ct_set_error(st, "%s", msg);
  return st;
}

ct_tensor *ct_keep(ct_tensor *t) {
  if (!t || !t->scope) return t;
  ct_scope *parent = t->scope->parent;
  ct_scope_unregister(t);
  if (parent) scope_add(parent, t);
  return t;
}
