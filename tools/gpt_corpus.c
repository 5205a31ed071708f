/* The built-in training text of `ctorch train-gpt` (no --data): short stories made up by a small
 * grammar from a fixed seed, so every machine gets the same text without a download. The
 * structure (sentences, quotes, paragraphs, a recurring cast) is easy for a tiny model to learn,
 * which makes the sample at the end of `make run` readable. */
#include "gpt_cmd.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint64_t s;
  char *buf;
  size_t n, cap;
  bool oom;
} gen;

static uint32_t rnd(gen *g, uint32_t n) { /* xorshift64*: fixed, platform independent */
  g->s ^= g->s >> 12;
  g->s ^= g->s << 25;
  g->s ^= g->s >> 27;
  return (uint32_t)(((g->s * 2685821657736338717ull) >> 33) % n);
}

static void put(gen *g, const char *s) {
  size_t l = strlen(s);
  if (g->oom) return;
  if (g->n + l + 1 > g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 1 << 16;
    while (cap < g->n + l + 1) cap *= 2;
    char *b = realloc(g->buf, cap);
    if (!b) { g->oom = true; return; }
    g->buf = b;
    g->cap = cap;
  }
  memcpy(g->buf + g->n, s, l + 1);
  g->n += l;
}

#define PICK(g, arr) (arr)[rnd(g, (uint32_t)(sizeof(arr) / sizeof(arr)[0]))]

static const char *const who[] = {"the old sailor", "a young girl", "the miller", "my brother", "the king",
                                  "a tired horse", "the little fox", "the baker's wife", "an old woman", "the shepherd",
                                  "the boy", "the queen", "a stranger", "the fisherman", "her mother", "the clockmaker"};
static const char *const vt[] = {"saw", "found", "carried", "lost", "remembered", "painted", "followed", "mended",
                                 "opened", "hid", "sold", "watched"};
static const char *const vpp[] = {"seen", "found", "carried", "lost", "forgotten", "painted", "followed", "mended",
                                  "opened", "hidden", "sold", "broken"};
static const char *const vi[] = {"walked", "waited", "sang", "laughed", "slept", "wept", "listened", "ran home",
                                 "sat down", "looked up", "stood still", "went on"};
static const char *const what[] = {"a silver key", "the red door", "an empty boat", "the morning bread", "a letter",
                                   "the lamp", "a small bird", "the old map", "a basket of apples", "the window",
                                   "a wooden box", "the last candle", "a blue coat", "the garden gate"};
static const char *const where[] = {"by the river", "in the garden", "at the market", "under the bridge",
                                    "on the hill", "near the church", "in the dark wood", "at the edge of the sea",
                                    "behind the mill", "in the kitchen", "on the long road", "by the fire"};
static const char *const when[] = {"In the morning", "At night", "When the rain stopped", "Long ago",
                                   "After supper", "One cold winter", "Before the sun rose", "That evening",
                                   "On the first day of spring", "Later"};
static const char *const adj[] = {"glad", "afraid", "quiet", "tired", "happy", "sad", "curious", "angry", "proud",
                                  "cold", "hungry", "kind"};
static const char *const said[] = {"said", "asked", "whispered", "cried", "answered", "called"};
static const char *const quote[] = {"Where are you going",   "Come with me",          "I have waited so long",
                                    "The night is cold",      "Do not be afraid",       "What did you find",
                                    "We must go home",        "Look at the sky",       "It is only the wind",
                                    "Tell me a story",        "The river is high today", "Who is there"};

static void cap_put(gen *g, const char *s) { /* the sentence's first letter in upper case */
  char tmp[128];
  size_t l = strlen(s);
  if (l >= sizeof tmp) l = sizeof tmp - 1;
  memcpy(tmp, s, l);
  tmp[l] = 0;
  if (tmp[0] >= 'a' && tmp[0] <= 'z') tmp[0] = (char)(tmp[0] - 'a' + 'A');
  put(g, tmp);
}

static void sentence(gen *g) {
  switch (rnd(g, 6)) {
    case 0:
      put(g, PICK(g, when)); put(g, ", "); put(g, PICK(g, who)); put(g, " "); put(g, PICK(g, vt)); put(g, " ");
      put(g, PICK(g, what)); put(g, " "); put(g, PICK(g, where)); put(g, ".");
      break;
    case 1:
      cap_put(g, PICK(g, who)); put(g, " "); put(g, PICK(g, vi)); put(g, " "); put(g, PICK(g, where));
      put(g, ", and "); put(g, PICK(g, who)); put(g, " "); put(g, PICK(g, vt)); put(g, " "); put(g, PICK(g, what));
      put(g, ".");
      break;
    case 2: {
      const char *q = PICK(g, quote);
      bool ask = !strncmp(q, "Where", 5) || !strncmp(q, "What", 4) || !strncmp(q, "Who", 3);
      put(g, "\""); put(g, q); put(g, ask ? "?\" " : ",\" "); put(g, ask ? "asked" : PICK(g, said)); put(g, " ");
      put(g, PICK(g, who)); put(g, ".");
      break;
    }
    case 3:
      cap_put(g, PICK(g, who)); put(g, " was "); put(g, PICK(g, adj)); put(g, ", because "); put(g, PICK(g, who));
      put(g, " had "); put(g, PICK(g, vpp)); put(g, " "); put(g, PICK(g, what)); put(g, ".");
      break;
    case 4:
      cap_put(g, PICK(g, who)); put(g, " "); put(g, PICK(g, vi)); put(g, " and "); put(g, PICK(g, vi)); put(g, ".");
      break;
    default:
      put(g, "Then "); put(g, PICK(g, who)); put(g, " "); put(g, PICK(g, vt)); put(g, " "); put(g, PICK(g, what));
      put(g, ", and it was "); put(g, PICK(g, adj) ); put(g, " work.");
      break;
  }
}

char *gpt_builtin_corpus(size_t target_bytes, size_t *len) {
  gen g = {0x9E3779B97F4A7C15ull, NULL, 0, 0, false};
  int chapter = 1;
  char head[64];
  while (!g.oom && g.n < target_bytes) {
    snprintf(head, sizeof head, "CHAPTER %d\n\n", chapter++);
    put(&g, head);
    int paragraphs = 3 + (int)rnd(&g, 4);
    for (int p = 0; p < paragraphs; p++) {
      int sentences = 2 + (int)rnd(&g, 4);
      for (int s = 0; s < sentences; s++) {
        if (s) put(&g, " ");
        sentence(&g);
      }
      put(&g, "\n\n");
    }
  }
  if (g.oom) {
    free(g.buf);
    return NULL;
  }
  *len = g.n;
  return g.buf;
}
