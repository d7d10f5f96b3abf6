/*
 * svc-spawner: the long-lived process that owns svcd's managed processes (README.md).
 *
 *   svc-spawner <run-dir>
 *
 * Binds <run-dir>/spawner.sock (mode 0600, peers of another uid refused by SO_PEERCRED), holds
 * <run-dir>/spawner.lock (one spawner per run dir), writes <run-dir>/spawner.pid, prints
 * "ready <pid>\n" on stdout once listening and then points stdout at /dev/null. It is a child
 * subreaper: it reaps every process it spawned (and their orphaned descendants) and keeps each exit
 * of a process it spawned until a client acknowledges it, so a restarted svcd learns the real exit
 * code of a process that ended while svcd was away. It exits when no client is connected and it
 * holds nothing, or when its socket file is gone (the run dir was deleted).
 *
 * Protocol: length-prefixed frames (u32 little-endian payload length, then the payload: u8 type and
 * the fields of that type), defined in spec/spawner-protocol.md; spec/spawner-vectors.json holds
 * the frames this file's decoder and encoder are tested against (test/frames-test.c). Any malformed
 * or oversized frame closes that connection; nothing a peer sends can end the spawner.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define PROTOCOL_VERSION 1u
#define MAX_FRAME (8u * 1024u * 1024u) /* payload bytes; a larger header closes the connection */
#define MIN_FRAME 5u                    /* type and request id: a smaller header closes it too */
#define MAX_CLIENTS 8
#define MAX_OUTPUT (64u * 1024u * 1024u) /* unsent bytes per client before it is dropped */
#define MAX_STRINGS (1u << 20)          /* argv and env entries */
#define MAX_GROUPS 65536u
#define MAX_CGROUPS 16u

/* Requests (client -> spawner). Every request starts with a u32 request id echoed by its reply. */
enum { REQ_HELLO = 1, REQ_SPAWN = 2, REQ_SIGNAL = 3, REQ_LIST = 4, REQ_ACK = 5 };
/* Replies and events (spawner -> client). */
enum { REP_OK = 0x80, REP_HELLO = 0x81, REP_SPAWNED = 0x82, REP_SPAWN_FAILED = 0x83, REP_LIST = 0x85, EV_EXIT = 0x90 };
/* Where a spawn failed (REP_SPAWN_FAILED). */
enum { STAGE_OUTPUT = 1, STAGE_STDIN = 2, STAGE_FORK = 3, STAGE_CHDIR = 4, STAGE_USER = 5, STAGE_EXEC = 6, STAGE_CGROUP = 7 };

struct entry {
  uint32_t id;
  pid_t pid;
  int exited;
  int32_t code;       /* exit status, or minus the signal number */
  uint64_t exited_ms; /* when it was reaped: ms since the epoch (CLOCK_REALTIME) */
  char *tag;
  uint32_t tag_len;
};

struct client {
  int fd;
  unsigned char *in;
  size_t in_len, in_cap;
  unsigned char *out;
  size_t out_len, out_cap;
};

static struct entry *entries;
static size_t entry_count, entry_cap;
static uint32_t next_id = 1;
static struct client clients[MAX_CLIENTS];
static int listen_fd = -1, signal_fd = -1;
static mode_t child_umask;
static pid_t self_pid;
static ino_t socket_inode;

#define MAX_LOG_LINES 1000 /* spawner.log is not rotated: a flood of bad peers cannot fill the disk */

static void logf_(const char *format, ...) {
  static unsigned lines;
  if (lines > MAX_LOG_LINES) return;
  if (lines++ == MAX_LOG_LINES) {
    static const char note[] = "svc-spawner: further log messages suppressed\n";
    ssize_t ignored = write(2, note, sizeof note - 1);
    (void)ignored;
    return;
  }
  char line[512];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(line, sizeof line - 1, format, args);
  va_end(args);
  if (n < 0) return;
  if ((size_t)n > sizeof line - 2) n = sizeof line - 2;
  line[n++] = '\n';
  ssize_t ignored = write(2, line, (size_t)n);
  (void)ignored;
}

/* ---- frames ------------------------------------------------------------------------------- */

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A frame header's payload length that may be read at all (else the connection is closed). */
static int frame_length_ok(uint32_t len) { return len >= MIN_FRAME && len <= MAX_FRAME; }

struct reader {
  const unsigned char *p;
  size_t left;
  int bad;
};

static uint8_t get_u8(struct reader *r) {
  if (r->left < 1) { r->bad = 1; return 0; }
  r->left--;
  return *r->p++;
}

static uint32_t get_u32(struct reader *r) {
  if (r->left < 4) { r->bad = 1; return 0; }
  uint32_t v = le32(r->p);
  r->p += 4;
  r->left -= 4;
  return v;
}

/* A NUL-terminated copy of a length-prefixed string; NULL (and r->bad) when short or holding NUL. */
static char *get_str(struct reader *r, uint32_t *len_out) {
  uint32_t len = get_u32(r);
  if (r->bad || len > r->left || memchr(r->p, 0, len) != NULL) { r->bad = 1; return NULL; }
  char *s = malloc((size_t)len + 1);
  if (s == NULL) { r->bad = 1; return NULL; }
  memcpy(s, r->p, len);
  s[len] = 0;
  r->p += len;
  r->left -= len;
  if (len_out != NULL) *len_out = len;
  return s;
}

/* Raw bytes (stdin data may hold NUL): pointer into the frame. */
static const unsigned char *get_bytes(struct reader *r, uint32_t *len_out) {
  uint32_t len = get_u32(r);
  if (r->bad || len > r->left) { r->bad = 1; return NULL; }
  const unsigned char *p = r->p;
  r->p += len;
  r->left -= len;
  *len_out = len;
  return p;
}

struct writer {
  unsigned char *buf;
  size_t len, cap;
  int failed;
};

static void put_raw(struct writer *w, const void *data, size_t n) {
  if (w->failed) return;
  if (w->len + n > w->cap) {
    size_t cap = w->cap == 0 ? 256 : w->cap;
    while (cap < w->len + n) cap *= 2;
    unsigned char *b = realloc(w->buf, cap);
    if (b == NULL) { w->failed = 1; return; }
    w->buf = b;
    w->cap = cap;
  }
  memcpy(w->buf + w->len, data, n);
  w->len += n;
}

static void put_u8(struct writer *w, uint8_t v) { put_raw(w, &v, 1); }

static void put_u32(struct writer *w, uint32_t v) {
  unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
  put_raw(w, b, 4);
}

static void put_u64(struct writer *w, uint64_t v) {
  put_u32(w, (uint32_t)v);
  put_u32(w, (uint32_t)(v >> 32));
}

static void put_str(struct writer *w, const char *s, uint32_t len) {
  put_u32(w, len);
  put_raw(w, s, len);
}

/* A frame under construction: 4 bytes of length reserved, then the type. */
static void frame_begin(struct writer *w, uint8_t type) {
  w->buf = NULL;
  w->len = w->cap = 0;
  w->failed = 0;
  put_u32(w, 0);
  put_u8(w, type);
}

/* Write the payload length into the reserved header: the frame is complete. */
static void frame_end(struct writer *w) {
  if (w->failed) return;
  uint32_t payload = (uint32_t)(w->len - 4);
  w->buf[0] = (unsigned char)payload;
  w->buf[1] = (unsigned char)(payload >> 8);
  w->buf[2] = (unsigned char)(payload >> 16);
  w->buf[3] = (unsigned char)(payload >> 24);
}

/* The replies and events (spec/spawner-protocol.md), each as one complete frame in `w`. */

static void encode_ok(struct writer *w, uint32_t req, int err) {
  frame_begin(w, REP_OK);
  put_u32(w, req);
  put_u32(w, (uint32_t)err);
  frame_end(w);
}

static void encode_hello(struct writer *w, uint32_t req, uint32_t version, uint32_t pid) {
  frame_begin(w, REP_HELLO);
  put_u32(w, req);
  put_u32(w, version);
  put_u32(w, pid);
  frame_end(w);
}

static void encode_spawned(struct writer *w, uint32_t req, uint32_t id, uint32_t pid) {
  frame_begin(w, REP_SPAWNED);
  put_u32(w, req);
  put_u32(w, id);
  put_u32(w, pid);
  frame_end(w);
}

static void encode_spawn_failed(struct writer *w, uint32_t req, uint8_t stage, int err) {
  frame_begin(w, REP_SPAWN_FAILED);
  put_u32(w, req);
  put_u8(w, stage);
  put_u32(w, (uint32_t)err);
  frame_end(w);
}

static void encode_list(struct writer *w, uint32_t req, const struct entry *list, size_t n) {
  frame_begin(w, REP_LIST);
  put_u32(w, req);
  put_u32(w, (uint32_t)n);
  for (size_t i = 0; i < n; i++) {
    put_u32(w, list[i].id);
    put_u32(w, (uint32_t)list[i].pid);
    put_u8(w, (uint8_t)list[i].exited);
    put_u32(w, (uint32_t)list[i].code);
    put_u64(w, list[i].exited_ms);
    put_str(w, list[i].tag, list[i].tag_len);
  }
  frame_end(w);
}

static void encode_exit(struct writer *w, const struct entry *e) {
  frame_begin(w, EV_EXIT);
  put_u32(w, e->id);
  put_u32(w, (uint32_t)e->pid);
  put_u32(w, (uint32_t)e->code);
  put_u64(w, e->exited_ms);
  frame_end(w);
}

static void drop_client(struct client *c) {
  if (c->fd < 0) return;
  close(c->fd);
  free(c->in);
  free(c->out);
  memset(c, 0, sizeof *c);
  c->fd = -1;
}

static void flush_client(struct client *c) {
  while (c->fd >= 0 && c->out_len > 0) {
    ssize_t n = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      drop_client(c);
      return;
    }
    memmove(c->out, c->out + n, c->out_len - (size_t)n);
    c->out_len -= (size_t)n;
  }
}

/* Queue a complete frame (frame_end) for `c` and free it; a client that does not read is dropped. */
static void frame_send(struct client *c, struct writer *w) {
  if (w->failed || c->fd < 0) { free(w->buf); return; }
  if (c->out_len + w->len > MAX_OUTPUT) {
    logf_("svc-spawner: client does not read its replies; disconnected");
    drop_client(c);
    free(w->buf);
    return;
  }
  if (c->out_len + w->len > c->out_cap) {
    size_t cap = c->out_cap == 0 ? 4096 : c->out_cap;
    while (cap < c->out_len + w->len) cap *= 2;
    unsigned char *b = realloc(c->out, cap);
    if (b == NULL) { drop_client(c); free(w->buf); return; }
    c->out = b;
    c->out_cap = cap;
  }
  memcpy(c->out + c->out_len, w->buf, w->len);
  c->out_len += w->len;
  free(w->buf);
  flush_client(c);
}

/* ---- the table of spawned processes ------------------------------------------------------- */

static struct entry *find_id(uint32_t id) {
  for (size_t i = 0; i < entry_count; i++)
    if (entries[i].id == id) return &entries[i];
  return NULL;
}

static struct entry *find_running_pid(pid_t pid) {
  for (size_t i = 0; i < entry_count; i++)
    if (entries[i].pid == pid && !entries[i].exited) return &entries[i];
  return NULL;
}

static size_t running_count(void) {
  size_t n = 0;
  for (size_t i = 0; i < entry_count; i++)
    if (!entries[i].exited) n++;
  return n;
}

static struct entry *add_entry(pid_t pid, char *tag, uint32_t tag_len) {
  if (entry_count == entry_cap) {
    size_t cap = entry_cap == 0 ? 64 : entry_cap * 2;
    struct entry *e = realloc(entries, cap * sizeof *e);
    if (e == NULL) return NULL;
    entries = e;
    entry_cap = cap;
  }
  struct entry *e = &entries[entry_count++];
  e->id = next_id++;
  if (next_id == 0) next_id = 1;
  e->pid = pid;
  e->exited = 0;
  e->code = 0;
  e->exited_ms = 0;
  e->tag = tag;
  e->tag_len = tag_len;
  return e;
}

static void remove_entry(struct entry *e) {
  free(e->tag);
  *e = entries[--entry_count];
}

/* ---- spawning ----------------------------------------------------------------------------- */

struct spawn_request {
  char *tag, *file, *cwd, *output;
  uint32_t tag_len;
  int has_stdin;
  const unsigned char *stdin_data;
  uint32_t stdin_len;
  char **argv, **envp;
  uint32_t argc, envc;
  int has_user;
  uid_t uid;
  gid_t gid;
  gid_t *groups;
  uint32_t ngroups;
  char **cgroups;
  uint32_t ncgroups;
};

static void free_strings(char **list, uint32_t n) {
  if (list == NULL) return;
  for (uint32_t i = 0; i < n; i++) free(list[i]);
  free(list);
}

static void free_spawn(struct spawn_request *s) {
  free(s->tag);
  free(s->file);
  free(s->cwd);
  free(s->output);
  free_strings(s->argv, s->argc);
  free_strings(s->envp, s->envc);
  free(s->groups);
  free_strings(s->cgroups, s->ncgroups);
}

/* A NULL-terminated list of `n` strings; n is bounded by the frame's size (4 bytes each at least). */
static char **get_strings(struct reader *r, uint32_t *n_out, uint32_t max) {
  uint32_t n = get_u32(r);
  if (r->bad || n > max || n > r->left / 4) { r->bad = 1; return NULL; }
  char **list = calloc((size_t)n + 1, sizeof *list);
  if (list == NULL) { r->bad = 1; return NULL; }
  *n_out = n;
  for (uint32_t i = 0; i < n && !r->bad; i++) list[i] = get_str(r, NULL);
  return list;
}

static int parse_spawn(struct reader *r, struct spawn_request *s) {
  memset(s, 0, sizeof *s);
  s->tag = get_str(r, &s->tag_len);
  s->file = get_str(r, NULL);
  s->cwd = get_str(r, NULL);
  s->output = get_str(r, NULL);
  s->has_stdin = get_u8(r);
  if (s->has_stdin) s->stdin_data = get_bytes(r, &s->stdin_len);
  s->argv = get_strings(r, &s->argc, MAX_STRINGS);
  s->envp = get_strings(r, &s->envc, MAX_STRINGS);
  s->has_user = get_u8(r);
  if (s->has_user && !r->bad) {
    s->uid = (uid_t)get_u32(r);
    s->gid = (gid_t)get_u32(r);
    uint32_t n = get_u32(r);
    if (r->bad || n > MAX_GROUPS || n > r->left / 4) {
      r->bad = 1;
    } else {
      s->groups = calloc((size_t)n + 1, sizeof *s->groups);
      if (s->groups == NULL) r->bad = 1;
      s->ngroups = n;
      for (uint32_t i = 0; i < n && !r->bad; i++) s->groups[i] = (gid_t)get_u32(r);
    }
  }
  if (!r->bad) s->cgroups = get_strings(r, &s->ncgroups, MAX_CGROUPS);
  if (r->bad || r->left != 0 || s->argc == 0 || s->file[0] == 0) return -1;
  return 0;
}

/* The child's stdin: the data in a pipe (or a memory file when it does not fit), else /dev/null. */
static int stdin_fd_for(const struct spawn_request *s) {
  if (!s->has_stdin) return open("/dev/null", O_RDONLY | O_CLOEXEC);
  int p[2];
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0) {
    if (s->stdin_len > 65536) fcntl(p[1], F_SETPIPE_SZ, (int)s->stdin_len);
    size_t done = 0;
    while (done < s->stdin_len) {
      ssize_t n = write(p[1], s->stdin_data + done, s->stdin_len - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += (size_t)n;
    }
    close(p[1]);
    if (done == s->stdin_len) {
      fcntl(p[0], F_SETFL, 0); /* the child reads a blocking pipe */
      return p[0];
    }
    close(p[0]);
  }
  int fd = memfd_create("svc-stdin", MFD_CLOEXEC);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < s->stdin_len) {
    ssize_t n = write(fd, s->stdin_data + done, s->stdin_len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) { close(fd); return -1; }
    done += (size_t)n;
  }
  lseek(fd, 0, SEEK_SET);
  return fd;
}

/* Why a child never ran, as it reports it to its parent: u8 stage, i32 errno (little-endian). */
static void status_bytes(unsigned char b[5], uint8_t stage, int err) {
  b[0] = stage;
  b[1] = (unsigned char)err;
  b[2] = (unsigned char)(err >> 8);
  b[3] = (unsigned char)(err >> 16);
  b[4] = (unsigned char)(err >> 24);
}

static void child_fail(int err_fd, uint8_t stage, int err) {
  unsigned char b[5];
  status_bytes(b, stage, err);
  ssize_t ignored = write(err_fd, b, sizeof b);
  (void)ignored;
  _exit(127);
}

/* Move `fd` to `target` without keeping close-on-exec (fd may already be `target`). */
static int place_fd(int fd, int target) {
  if (fd == target) return fcntl(fd, F_SETFD, 0);
  return dup2(fd, target) < 0 ? -1 : 0;
}

/*
 * The privilege boundary (docs/security.md): everything after this point may act on what the caller
 * sent. Switch to the execution user first (groups, gid, uid; a failure never runs anything), then
 * enter the working directory as that user (a directory only root may enter is refused), then
 * exec with exactly the caller's environment, so the loader and any shell see it only once they run
 * as the user. `mask` < 0 keeps the umask. Never returns.
 */
static void become_and_exec(const struct spawn_request *s, int err_fd, int mask) {
  if (s->has_user) {
    if (setgroups(s->ngroups, s->groups) < 0) child_fail(err_fd, STAGE_USER, errno);
    if (setgid(s->gid) < 0) child_fail(err_fd, STAGE_USER, errno);
    if (setuid(s->uid) < 0) child_fail(err_fd, STAGE_USER, errno);
    /* Paranoia: a uid switch that could be undone would leave root one call away. */
    if (s->uid != 0 && setuid(0) == 0) child_fail(err_fd, STAGE_USER, EPERM);
  }
  if (s->cwd[0] != 0 && chdir(s->cwd) < 0) child_fail(err_fd, STAGE_CHDIR, errno);
  if (mask >= 0) umask((mode_t)mask);
  environ = s->envp;
  execvp(s->file, s->argv);
  child_fail(err_fd, STAGE_EXEC, errno);
}

/* Write this process into the given cgroup.procs files (as root, before the user switch). */
static void enter_cgroups(const struct spawn_request *s, int err_fd) {
  for (uint32_t i = 0; i < s->ncgroups; i++) {
    int fd = open(s->cgroups[i], O_WRONLY | O_CLOEXEC);
    if (fd < 0) child_fail(err_fd, STAGE_CGROUP, errno);
    if (write(fd, "0\n", 2) < 0) child_fail(err_fd, STAGE_CGROUP, errno);
    close(fd);
  }
}

/* In the forked child: never returns. Only async-signal-safe calls until exec. */
static void run_child(const struct spawn_request *s, int in_fd, int out_fd, int err_fd) {
  sigset_t none;
  sigemptyset(&none);
  for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
  sigprocmask(SIG_SETMASK, &none, NULL);
  setsid();
  enter_cgroups(s, err_fd);
  /* Out of the way of 0..2 first, so that the dup2 calls below cannot clobber each other. */
  if (in_fd < 3) { in_fd = fcntl(in_fd, F_DUPFD_CLOEXEC, 3); }
  if (out_fd < 3) { out_fd = fcntl(out_fd, F_DUPFD_CLOEXEC, 3); }
  if (in_fd < 0 || out_fd < 0) child_fail(err_fd, STAGE_OUTPUT, errno);
  if (place_fd(in_fd, 0) < 0 || place_fd(out_fd, 1) < 0 || place_fd(out_fd, 2) < 0)
    child_fail(err_fd, STAGE_OUTPUT, errno);
  /* The spawner died after the fork: svcd cannot know this process, so it must not run. */
  if (getppid() != self_pid) _exit(127);
  become_and_exec(s, err_fd, (int)child_umask);
}

static void reply_failed(struct client *c, uint32_t req, uint8_t stage, int err) {
  struct writer w;
  encode_spawn_failed(&w, req, stage, err);
  frame_send(c, &w);
}

static void handle_spawn(struct client *c, uint32_t req, struct spawn_request *s) {
  int out_fd = s->output[0] == 0 ? open("/dev/null", O_WRONLY | O_CLOEXEC)
                                 : open(s->output, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
  if (out_fd < 0) { reply_failed(c, req, STAGE_OUTPUT, errno); return; }
  int in_fd = stdin_fd_for(s);
  if (in_fd < 0) { int e = errno; close(out_fd); reply_failed(c, req, STAGE_STDIN, e); return; }
  int errp[2];
  if (pipe2(errp, O_CLOEXEC) < 0) {
    int e = errno;
    close(out_fd);
    close(in_fd);
    reply_failed(c, req, STAGE_FORK, e);
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(errp[0]);
    run_child(s, in_fd, out_fd, errp[1]);
  }
  int fork_errno = errno;
  close(errp[1]);
  close(out_fd);
  close(in_fd);
  if (pid < 0) {
    close(errp[0]);
    reply_failed(c, req, STAGE_FORK, fork_errno);
    return;
  }
  /* Wait for the exec (EOF on the close-on-exec pipe) or the child's report of why it failed. */
  unsigned char b[5];
  size_t got = 0;
  while (got < sizeof b) {
    ssize_t n = read(errp[0], b + got, sizeof b - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(errp[0]);
  if (got == sizeof b) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    reply_failed(c, req, b[0], (int)le32(b + 1));
    return;
  }
  struct entry *e = add_entry(pid, s->tag, s->tag_len);
  if (e == NULL) {
    /* Out of memory for the table: the process runs, but nobody could ever learn its exit. */
    kill(-pid, SIGKILL);
    reply_failed(c, req, STAGE_FORK, ENOMEM);
    return;
  }
  s->tag = NULL; /* owned by the entry now */
  struct writer w;
  encode_spawned(&w, req, e->id, (uint32_t)pid);
  frame_send(c, &w);
}

/* ---- requests ----------------------------------------------------------------------------- */

static void reply_ok(struct client *c, uint32_t req, int err) {
  struct writer w;
  encode_ok(&w, req, err);
  frame_send(c, &w);
}

/* A request as decoded from one payload (spec/spawner-protocol.md). */
struct request {
  uint8_t type;
  uint32_t id;                /* request id, echoed by the reply */
  uint32_t version;           /* HELLO: the client's protocol version */
  uint32_t entry;             /* SIGNAL, ACK: the entry id */
  uint8_t group, signal;      /* SIGNAL */
  struct spawn_request spawn; /* SPAWN; free_spawn frees it, also after a failed parse */
};

/* Decode one payload (without its length header). -1: malformed, the connection must be closed. */
static int parse_request(const unsigned char *payload, size_t len, struct request *q) {
  struct reader r = {payload, len, 0};
  memset(q, 0, sizeof *q);
  q->type = get_u8(&r);
  q->id = get_u32(&r);
  if (r.bad) return -1;
  switch (q->type) {
  case REQ_HELLO:
    q->version = get_u32(&r);
    break;
  case REQ_SPAWN:
    return parse_spawn(&r, &q->spawn);
  case REQ_SIGNAL:
    q->entry = get_u32(&r);
    q->group = get_u8(&r);
    q->signal = get_u8(&r);
    if (q->signal >= NSIG) return -1;
    break;
  case REQ_LIST:
    break;
  case REQ_ACK:
    q->entry = get_u32(&r);
    break;
  default:
    return -1;
  }
  return r.bad || r.left != 0 ? -1 : 0;
}

/* One complete frame from `c`; returns -1 when the connection must be closed (protocol error). */
static int handle_frame(struct client *c, const unsigned char *payload, size_t len) {
  struct request q;
  if (parse_request(payload, len, &q) < 0) {
    free_spawn(&q.spawn);
    return -1;
  }
  struct writer w;
  switch (q.type) {
  case REQ_HELLO:
    /* Whatever q.version: the client decides whether it can talk to this version. */
    encode_hello(&w, q.id, PROTOCOL_VERSION, (uint32_t)self_pid);
    frame_send(c, &w);
    break;
  case REQ_SPAWN:
    handle_spawn(c, q.id, &q.spawn);
    break;
  case REQ_SIGNAL: {
    struct entry *e = find_id(q.entry);
    int err = 0;
    /* Only a process not reaped yet: its pid (and so its group id) cannot have been reused. */
    if (e == NULL || e->exited) err = ESRCH;
    else if (kill(q.group ? -e->pid : e->pid, q.signal) < 0) err = errno;
    reply_ok(c, q.id, err);
    break;
  }
  case REQ_LIST:
    encode_list(&w, q.id, entries, entry_count);
    frame_send(c, &w);
    break;
  case REQ_ACK: {
    struct entry *e = find_id(q.entry);
    int err = 0;
    if (e == NULL) err = ESRCH;
    else if (!e->exited) err = EBUSY; /* a running process is never forgotten */
    else remove_entry(e);
    reply_ok(c, q.id, err);
    break;
  }
  }
  free_spawn(&q.spawn);
  return 0;
}

static void read_client(struct client *c) {
  for (;;) {
    if (c->in_cap - c->in_len < 65536) {
      size_t cap = c->in_cap == 0 ? 65536 : c->in_cap * 2;
      if (cap > MAX_FRAME + 4 + 65536) cap = MAX_FRAME + 4 + 65536;
      if (cap > c->in_cap) {
        unsigned char *b = realloc(c->in, cap);
        if (b == NULL) { drop_client(c); return; }
        c->in = b;
        c->in_cap = cap;
      }
    }
    if (c->in_cap == c->in_len) break; /* full: parse what we have first */
    ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) { drop_client(c); return; }
    c->in_len += (size_t)n;
    if ((size_t)n < 65536) break;
  }
  size_t at = 0;
  while (c->fd >= 0 && c->in_len - at >= 4) {
    const unsigned char *h = c->in + at;
    uint32_t len = le32(h);
    if (!frame_length_ok(len)) {
      logf_("svc-spawner: frame of %u bytes refused; connection closed", len);
      drop_client(c);
      return;
    }
    if (c->in_len - at - 4 < len) break;
    if (handle_frame(c, h + 4, len) < 0) {
      logf_("svc-spawner: malformed frame (type %u); connection closed", (unsigned)h[4]);
      drop_client(c);
      return;
    }
    at += 4 + (size_t)len;
  }
  if (c->fd >= 0 && at > 0) {
    memmove(c->in, c->in + at, c->in_len - at);
    c->in_len -= at;
  }
}

/* ---- exits -------------------------------------------------------------------------------- */

static void reap(void) {
  struct signalfd_siginfo info;
  while (read(signal_fd, &info, sizeof info) > 0) {
  }
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    struct entry *e = find_running_pid(pid);
    if (e == NULL) continue; /* an orphaned descendant (we are its subreaper): reaped, nothing to keep */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    e->exited = 1;
    e->code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
    e->exited_ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    for (int i = 0; i < MAX_CLIENTS; i++) {
      if (clients[i].fd < 0) continue;
      struct writer w;
      encode_exit(&w, e);
      frame_send(&clients[i], &w);
    }
  }
}

static void accept_client(void) {
  for (;;) {
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != geteuid()) {
      logf_("svc-spawner: peer of uid %d refused", (int)cred.uid);
      close(fd);
      continue;
    }
    int slot = -1;
    for (int i = 0; i < MAX_CLIENTS; i++)
      if (clients[i].fd < 0) { slot = i; break; }
    if (slot < 0) {
      logf_("svc-spawner: %d clients connected already; connection refused", MAX_CLIENTS);
      close(fd);
      continue;
    }
    clients[slot].fd = fd;
  }
}

/* The run dir was deleted or another spawner replaced our socket: nobody can reach us any more. */
static int socket_gone(void) {
  struct stat st;
  return lstat("spawner.sock", &st) < 0 || st.st_ino != socket_inode;
}

static void write_pid_file(void) {
  char text[32];
  int n = snprintf(text, sizeof text, "%d\n", (int)self_pid);
  int fd = open(".spawner.pid.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ssize_t ignored = write(fd, text, (size_t)n);
  (void)ignored;
  close(fd);
  rename(".spawner.pid.tmp", "spawner.pid");
}

/* Read exactly `n` bytes from `fd` (EOF or an error first: -1). */
static int read_exact(int fd, unsigned char *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

/* The one frame of `svc-spawner exec`: a well-formed SPAWN with no output path and no stdin. */
static int parse_exec_request(const unsigned char *payload, size_t len, struct request *q) {
  if (parse_request(payload, len, q) < 0 || q->type != REQ_SPAWN) return -1;
  return q->spawn.output[0] != 0 || q->spawn.has_stdin ? -1 : 0;
}

/*
 * `svc-spawner exec <request-fd> <status-fd>`: the same privilege boundary for processes svcd starts
 * itself (in-process runner, health checks, file transfers). svcd starts this mode with an empty
 * environment and writes one SPAWN frame (output path '', no stdin: the process keeps the
 * descriptors it was given) to <request-fd>; the frame's user, working directory and environment
 * are applied by become_and_exec exactly as for a spawned child. A failure is reported on
 * <status-fd> as 5 bytes (stage, errno) and exit 127; a successful exec closes <status-fd> (EOF).
 */
static int exec_mode(const char *request_arg, const char *status_arg) {
  char *end;
  long request_fd = strtol(request_arg, &end, 10);
  if (*end != 0 || request_fd < 3 || request_fd > 1024) return 2;
  long status_fd = strtol(status_arg, &end, 10);
  if (*end != 0 || status_fd < 3 || status_fd > 1024 || status_fd == request_fd) return 2;
  if (fcntl((int)status_fd, F_SETFD, FD_CLOEXEC) < 0) return 2;
  unsigned char header[4];
  if (read_exact((int)request_fd, header, 4) < 0) child_fail((int)status_fd, STAGE_STDIN, EPROTO);
  uint32_t len = le32(header);
  if (!frame_length_ok(len)) child_fail((int)status_fd, STAGE_STDIN, EMSGSIZE);
  unsigned char *payload = malloc(len);
  if (payload == NULL) child_fail((int)status_fd, STAGE_STDIN, ENOMEM);
  if (read_exact((int)request_fd, payload, len) < 0) child_fail((int)status_fd, STAGE_STDIN, EPROTO);
  close((int)request_fd);
  struct request q; /* its request id is not used here */
  if (parse_exec_request(payload, len, &q) < 0) child_fail((int)status_fd, STAGE_STDIN, EPROTO);
  enter_cgroups(&q.spawn, (int)status_fd);
  become_and_exec(&q.spawn, (int)status_fd, -1);
  return 127; /* not reached */
}

/* test/frames-test.c includes this file with SPAWNER_MAIN defined, to give it a main of its own. */
#ifndef SPAWNER_MAIN
#define SPAWNER_MAIN main
#endif

int SPAWNER_MAIN(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "exec") == 0) return exec_mode(argv[2], argv[3]);
  if (argc != 2) {
    fprintf(stderr, "usage: svc-spawner <run-dir> | svc-spawner exec <request-fd> <status-fd>\n");
    return 2;
  }
  self_pid = getpid();
  child_umask = umask(077);
  if (chdir(argv[1]) < 0) {
    logf_("svc-spawner: cannot enter %s: %s", argv[1], strerror(errno));
    return 1;
  }
  int lock = open("spawner.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0) {
    logf_("svc-spawner: another spawner holds %s/spawner.lock", argv[1]);
    return 3;
  }
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
    logf_("svc-spawner: cannot become a subreaper: %s", strerror(errno));
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  signal_fd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (signal_fd < 0 || listen_fd < 0) {
    logf_("svc-spawner: %s", strerror(errno));
    return 1;
  }
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  strcpy(addr.sun_path, "spawner.sock");
  unlink("spawner.sock");
  if (bind(listen_fd, (struct sockaddr *)&addr, sizeof addr) < 0 || chmod("spawner.sock", 0600) < 0 ||
      listen(listen_fd, 16) < 0) {
    logf_("svc-spawner: cannot listen on %s/spawner.sock: %s", argv[1], strerror(errno));
    return 1;
  }
  struct stat st;
  if (lstat("spawner.sock", &st) == 0) socket_inode = st.st_ino;
  write_pid_file();
  for (int i = 0; i < MAX_CLIENTS; i++) clients[i].fd = -1;
  printf("ready %d\n", (int)self_pid);
  fflush(stdout);
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull >= 0) {
    dup2(devnull, 0);
    dup2(devnull, 1);
    close(devnull);
  }
  logf_("svc-spawner %d: listening on %s/spawner.sock", (int)self_pid, argv[1]);

  int ever_connected = 0;
  time_t idle_since = time(NULL);
  for (;;) {
    struct pollfd fds[2 + MAX_CLIENTS];
    struct client *owner[2 + MAX_CLIENTS];
    nfds_t n = 0;
    fds[n] = (struct pollfd){.fd = listen_fd, .events = POLLIN};
    owner[n++] = NULL;
    fds[n] = (struct pollfd){.fd = signal_fd, .events = POLLIN};
    owner[n++] = NULL;
    int connected = 0;
    for (int i = 0; i < MAX_CLIENTS; i++) {
      if (clients[i].fd < 0) continue;
      connected++;
      fds[n] = (struct pollfd){.fd = clients[i].fd, .events = (short)(POLLIN | (clients[i].out_len > 0 ? POLLOUT : 0))};
      owner[n++] = &clients[i];
    }
    if (connected > 0) {
      ever_connected = 1;
      idle_since = time(NULL);
    } else if (ever_connected || time(NULL) - idle_since >= 10) {
      /* Nobody connected: leave when holding nothing, or when nobody could ever reach us again. */
      if (entry_count == 0 || socket_gone()) {
        logf_("svc-spawner %d: exiting (%zu processes running, %zu held)", (int)self_pid, running_count(), entry_count);
        return 0;
      }
    }
    int ready = poll(fds, n, connected > 0 ? -1 : 2000);
    if (ready < 0) {
      if (errno == EINTR) continue;
      logf_("svc-spawner: poll: %s", strerror(errno));
      return 1;
    }
    if (fds[1].revents & POLLIN) reap();
    for (nfds_t i = 2; i < n; i++) {
      struct client *c = owner[i];
      if (c->fd < 0 || c->fd != fds[i].fd) continue;
      if (fds[i].revents & POLLOUT) flush_client(c);
      if (c->fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) read_client(c);
    }
    if (fds[0].revents & POLLIN) accept_client();
  }
}
