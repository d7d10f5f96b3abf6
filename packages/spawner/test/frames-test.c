/*
 * svc-spawner's own request decoder and reply encoder, driven line by line by frames-vectors.test.ts
 * with every case of spec/spawner-vectors.json. It includes svc-spawner.c whole (under another name
 * for its main) and answers each command on stdin with one line on stdout:
 *
 *   decode <hex>    a frame as the socket reads it: the request as JSON, or "refused"
 *   exec <hex>      the frame of `svc-spawner exec`: the request as JSON, or "refused"
 *   encode OK <request_id> <errno>                         the frame, as hex
 *   encode HELLO <request_id> <version> <pid>
 *   encode SPAWNED <request_id> <entry_id> <pid>
 *   encode SPAWN_FAILED <request_id> <stage> <errno>
 *   encode LIST <request_id> <count> then per entry: <entry_id> <pid> <exited 0|1> <code> <exit_time_ms> <tag hex>
 *   encode EXIT <entry_id> <pid> <code> <exit_time_ms>
 *   status <stage> <errno>   the 5 bytes a child that never ran reports, as hex
 *   limits                   the protocol's constants, as JSON
 *
 * Hex is lowercase; "-" is zero bytes. JSON strings escape only `"`, `\` and control bytes: the
 * vectors' strings are UTF-8, passed through as they are.
 */
#define SPAWNER_MAIN spawner_main
#include "../src/svc-spawner.c"

static unsigned char *from_hex(const char *hex, size_t *n) {
  size_t len = strcmp(hex, "-") == 0 ? 0 : strlen(hex);
  unsigned char *b = malloc(len / 2 + 1);
  if (b == NULL || len % 2 != 0) { free(b); return NULL; }
  for (size_t i = 0; i < len / 2; i++) {
    unsigned v;
    if (sscanf(hex + 2 * i, "%2x", &v) != 1) { free(b); return NULL; }
    b[i] = (unsigned char)v;
  }
  *n = len / 2;
  return b;
}

static void print_hex(const unsigned char *b, size_t n) {
  for (size_t i = 0; i < n; i++) printf("%02x", b[i]);
}

static void print_str(const char *s) {
  putchar('"');
  for (const unsigned char *p = (const unsigned char *)s; *p != 0; p++) {
    if (*p == '"' || *p == '\\') printf("\\%c", *p);
    else if (*p < 0x20 || *p == 0x7f) printf("\\u%04x", *p);
    else putchar(*p);
  }
  putchar('"');
}

static void print_strs(char **list, uint32_t n) {
  putchar('[');
  for (uint32_t i = 0; i < n; i++) {
    if (i > 0) putchar(',');
    print_str(list[i]);
  }
  putchar(']');
}

static void print_spawn(const struct spawn_request *s) {
  printf(",\"tag\":");
  print_str(s->tag);
  printf(",\"file\":");
  print_str(s->file);
  printf(",\"cwd\":");
  print_str(s->cwd);
  printf(",\"output_path\":");
  print_str(s->output);
  printf(",\"stdin\":");
  if (s->has_stdin) {
    printf("{\"$hex\":\"");
    print_hex(s->stdin_data, s->stdin_len);
    printf("\"}");
  } else {
    printf("null");
  }
  printf(",\"argv\":");
  print_strs(s->argv, s->argc);
  printf(",\"env\":");
  print_strs(s->envp, s->envc);
  printf(",\"user\":");
  if (s->has_user) {
    printf("{\"uid\":%u,\"gid\":%u,\"groups\":[", (unsigned)s->uid, (unsigned)s->gid);
    for (uint32_t i = 0; i < s->ngroups; i++) printf(i > 0 ? ",%u" : "%u", (unsigned)s->groups[i]);
    printf("]}");
  } else {
    printf("null");
  }
  printf(",\"cgroup_procs\":");
  print_strs(s->cgroups, s->ncgroups);
}

static void print_request(const struct request *q) {
  static const char *const names[] = {[REQ_HELLO] = "HELLO", [REQ_SPAWN] = "SPAWN", [REQ_SIGNAL] = "SIGNAL",
                                      [REQ_LIST] = "LIST", [REQ_ACK] = "ACK"};
  printf("{\"type\":\"%s\",\"request_id\":%u", names[q->type], (unsigned)q->id);
  switch (q->type) {
  case REQ_HELLO: printf(",\"version\":%u", (unsigned)q->version); break;
  case REQ_SPAWN: print_spawn(&q->spawn); break;
  case REQ_SIGNAL:
    printf(",\"entry_id\":%u,\"group\":%s,\"signal\":%u", (unsigned)q->entry, q->group ? "true" : "false",
           (unsigned)q->signal);
    break;
  case REQ_ACK: printf(",\"entry_id\":%u", (unsigned)q->entry); break;
  }
  printf("}\n");
}

/* As the spawner reads a frame: the header's bound first, then the payload (parse_request). */
static void decode(const char *hex, int exec) {
  size_t n;
  unsigned char *b = from_hex(hex, &n);
  if (b == NULL || n < 4 || (frame_length_ok(le32(b)) && le32(b) != n - 4)) {
    printf("incomplete\n"); /* not a vector's frame: the test fails */
    free(b);
    return;
  }
  struct request q;
  memset(&q, 0, sizeof q);
  if (!frame_length_ok(le32(b))) printf("refused\n");
  else if ((exec ? parse_exec_request : parse_request)(b + 4, n - 4, &q) < 0) printf("refused\n");
  else print_request(&q);
  free_spawn(&q.spawn);
  free(b);
}

/* The next space-separated word of the command line as a number (strtoll: i32 and u32 alike). */
static long long num(char **rest) {
  char *word = strtok_r(NULL, " ", rest);
  return word == NULL ? 0 : strtoll(word, NULL, 10);
}

static void encode(char **rest) {
  const char *type = strtok_r(NULL, " ", rest);
  struct writer w;
  struct entry *list = NULL;
  size_t count = 0;
  if (type == NULL) {
    printf("unknown\n");
    return;
  } else if (strcmp(type, "OK") == 0) {
    uint32_t req = (uint32_t)num(rest);
    encode_ok(&w, req, (int)num(rest));
  } else if (strcmp(type, "HELLO") == 0) {
    uint32_t req = (uint32_t)num(rest), version = (uint32_t)num(rest);
    encode_hello(&w, req, version, (uint32_t)num(rest));
  } else if (strcmp(type, "SPAWNED") == 0) {
    uint32_t req = (uint32_t)num(rest), id = (uint32_t)num(rest);
    encode_spawned(&w, req, id, (uint32_t)num(rest));
  } else if (strcmp(type, "SPAWN_FAILED") == 0) {
    uint32_t req = (uint32_t)num(rest);
    uint8_t stage = (uint8_t)num(rest);
    encode_spawn_failed(&w, req, stage, (int)num(rest));
  } else if (strcmp(type, "LIST") == 0) {
    uint32_t req = (uint32_t)num(rest);
    count = (size_t)num(rest);
    list = calloc(count + 1, sizeof *list);
    for (size_t i = 0; list != NULL && i < count; i++) {
      list[i].id = (uint32_t)num(rest);
      list[i].pid = (pid_t)num(rest);
      list[i].exited = (int)num(rest);
      list[i].code = (int32_t)num(rest);
      list[i].exited_ms = (uint64_t)num(rest);
      const char *tag = strtok_r(NULL, " ", rest);
      size_t len = 0;
      list[i].tag = (char *)from_hex(tag == NULL ? "-" : tag, &len);
      list[i].tag_len = (uint32_t)len;
    }
    if (list == NULL) { printf("unknown\n"); return; }
    encode_list(&w, req, list, count);
  } else if (strcmp(type, "EXIT") == 0) {
    struct entry e = {0};
    e.id = (uint32_t)num(rest);
    e.pid = (pid_t)num(rest);
    e.code = (int32_t)num(rest);
    e.exited_ms = (uint64_t)num(rest);
    encode_exit(&w, &e);
  } else {
    printf("unknown\n");
    return;
  }
  if (w.failed) printf("failed\n");
  else {
    print_hex(w.buf, w.len);
    printf("\n");
  }
  free(w.buf);
  for (size_t i = 0; i < count; i++) free(list[i].tag);
  free(list);
}

int main(void) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, stdin)) > 0) {
    if (line[n - 1] == '\n') line[n - 1] = 0;
    char *rest;
    const char *command = strtok_r(line, " ", &rest);
    if (command == NULL) continue;
    if (strcmp(command, "decode") == 0 || strcmp(command, "exec") == 0) {
      const char *hex = strtok_r(NULL, " ", &rest);
      decode(hex == NULL ? "-" : hex, command[0] == 'e');
    } else if (strcmp(command, "encode") == 0) {
      encode(&rest);
    } else if (strcmp(command, "status") == 0) {
      unsigned char b[5];
      uint8_t stage = (uint8_t)num(&rest);
      status_bytes(b, stage, (int)num(&rest));
      print_hex(b, sizeof b);
      printf("\n");
    } else if (strcmp(command, "limits") == 0) {
      printf("{\"version\":%u,\"minPayload\":%u,\"maxPayload\":%u,\"maxStrings\":%u,\"maxGroups\":%u,"
             "\"maxCgroups\":%u,\"nsig\":%d}\n",
             PROTOCOL_VERSION, MIN_FRAME, MAX_FRAME, MAX_STRINGS, MAX_GROUPS, MAX_CGROUPS, NSIG);
    } else {
      printf("unknown\n");
    }
  }
  free(line);
  return 0;
}
