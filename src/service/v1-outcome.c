/* v1-outcome.c: a /v1 session's outcomes (user.define_outcome, cma-api-more.md §7.4): the echo's
 * outcome_id and its rubric (a file's text read when it is sent), the task the agent is given,
 * and the grader: after each turn that ends on its own, one model call in a context of its own
 * (the rubric, the task and the answer; no tools) judges the answer, logged as
 * span.outcome_evaluation_start / _ongoing / _end, and either closes the outcome or queues a
 * revision turn, at most max_iterations turns in all. The session's outcome_evaluations[] follow
 * these events (v1_outcome_follow). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dynbuf.h"
#include "macro.h"
#include "time-util.h"
#include "utf8.h"
#include "v1-files.h"
#include "v1-run-internal.h"

static const char GRADER_SYSTEM[] =
        "You are a strict grader. You judge whether an agent's answer satisfies a rubric. You do not do the "
        "task yourself. Reply with one JSON object and nothing else: {\"result\": \"satisfied\" | "
        "\"needs_revision\" | \"failed\", \"explanation\": \"...\"}. satisfied: the answer meets every "
        "requirement of the rubric. needs_revision: it does not yet; the explanation says precisely what is "
        "missing or wrong, for the agent to fix. failed: the rubric cannot apply to this task at all.";

/* The rubric of a file: its bytes, UTF-8 text of at most V1_RUBRIC_MAX * 4 bytes. */
static int rubric_of_file(live *l, const char *file_id, char **ret, v1_err *err) {
        if (!l->g->cfg.files)
                return v1_fail(err, 400, NULL, "rubric.file_id: this server keeps no files (send the rubric as text)");
        int fd = -1;
        uint64_t size = 0;
        json_t *obj = NULL;
        int r = v1_file_open(l->g->cfg.files, file_id, &fd, &size, &obj, err);
        json_decref(obj);
        if (r < 0)
                return r;
        if (size > 4ULL * V1_RUBRIC_MAX) {
                close(fd);
                return v1_fail(err, 400, NULL, "rubric.file_id: %s has %llu bytes, a rubric at most %u characters",
                               file_id, (unsigned long long) size, V1_RUBRIC_MAX);
        }
        char *buf = malloc(size + 1);
        size_t got = 0;
        while (buf && got < size) {
                ssize_t n = pread(fd, buf + got, size - got, (off_t) got);
                if (n <= 0)
                        break;
                got += (size_t) n;
        }
        close(fd);
        if (!buf)
                return v1_fail(err, 500, "", "out of memory");
        buf[got] = '\0';
        if (got != size || !utf8_is_valid(buf, got) || memchr(buf, '\0', got)) {
                free(buf);
                return v1_fail(err, 400, NULL, "rubric.file_id: %s is not UTF-8 text (a rubric file is text)", file_id);
        }
        *ret = buf;
        return 0;
}

int v1_outcome_admit_locked(live *l, json_t *ev, json_t **ret_rubric, v1_err *err) {
        json_t *rub = json_object_get(ev, "rubric");
        const char *fid = json_string_value(json_object_get(rub, "file_id"));
        *ret_rubric = NULL;
        if (fid) {
                _cleanup_free_ char *text = NULL;
                int r = rubric_of_file(l, fid, &text, err);
                if (r < 0)
                        return r;
                if (!(*ret_rubric = json_string(text)))
                        return v1_fail(err, 500, "", "out of memory");
        } else
                *ret_rubric = json_incref(json_object_get(rub, "content"));
        char id[STORE_ID_MAX];
        v1_id_new("outc_", id);
        return json_object_set_new(ev, "outcome_id", json_string(id)) < 0 ? v1_fail(err, 500, "", "out of memory") : 0;
}

json_t *v1_outcome_entry(const json_t *ev, const json_t *rubric) {
        json_t *text = json_incref((json_t *) rubric);
        const char *desc = json_string_value(json_object_get(ev, "description"));
        _cleanup_free_ char *task = NULL;
        if (asprintf(&task,
                     "Work toward this outcome:\n%s\n\nWhen you answer, your answer is graded against this "
                     "rubric:\n%s",
                     desc ? desc : "", json_string_value(text) ?: "") < 0)
                task = NULL;
        json_t *o = task ? json_pack("{s:O, s:s, s:o, s:O, s:i}", "outcome_id", json_object_get(ev, "outcome_id"),
                                     "description", desc ? desc : "", "rubric", text, "max_iterations",
                                     json_object_get(ev, "max_iterations"), "iteration", 0)
                         : (json_decref(text), NULL);
        json_t *entry = o ? json_pack("{s:s, s:[], s:o}", "text", task, "queued", "outcome", o) : NULL;
        return entry;
}

/* ---- the session object ---- */

static json_t *evaluation_of(json_t *obj, const char *oid) {
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(obj, "outcome_evaluations"), i, x) {
                const char *id = json_string_value(json_object_get(x, "outcome_id"));
                if (id && oid && strcmp(id, oid) == 0)
                        return x;
        }
        return NULL;
}

bool v1_outcome_follow(json_t *obj, const json_t *ev, const char *type, const char *now) {
        const char *oid = json_string_value(json_object_get(ev, "outcome_id"));
        json_t *list = json_object_get(obj, "outcome_evaluations");
        if (strcmp(type, "user.define_outcome") == 0) {
                if (!json_is_array(list)) {
                        list = json_array();
                        json_object_set_new(obj, "outcome_evaluations", list);
                }
                json_array_append_new(list,
                                      json_pack("{s:s, s:s?, s:O, s:i, s:s, s:n, s:n}", "type", "outcome_evaluation",
                                                "outcome_id", oid, "description", json_object_get(ev, "description"),
                                                "iteration", 0, "result", "pending", "explanation", "completed_at"));
                return true;
        }
        if (strcmp(type, "session.status_running") == 0) { /* the first outcome waiting is worked on */
                size_t i;
                json_t *x;
                json_array_foreach(list, i, x) {
                        if (strcmp(json_string_value(json_object_get(x, "result")) ?: "", "pending") == 0) {
                                json_object_set_new(x, "result", json_string("running"));
                                return true;
                        }
                }
                return false;
        }
        json_t *x = evaluation_of(obj, oid);
        if (!x)
                return false;
        json_object_set(x, "iteration", json_object_get(ev, "iteration"));
        if (strcmp(type, "span.outcome_evaluation_start") == 0) {
                json_object_set_new(x, "result", json_string("evaluating"));
                return true;
        }
        if (strcmp(type, "span.outcome_evaluation_end") != 0)
                return false;
        const char *res = json_string_value(json_object_get(ev, "result")) ?: "failed";
        json_object_set(x, "explanation", json_object_get(ev, "explanation"));
        if (strcmp(res, "needs_revision") == 0) {
                json_object_set_new(x, "result", json_string("running"));
                json_object_set_new(x, "iteration",
                                    json_integer(json_integer_value(json_object_get(ev, "iteration")) + 1));
        } else {
                json_object_set_new(x, "result", json_string(res));
                json_object_set_new(x, "completed_at", json_string(now));
        }
        return true;
}

void v1_outcome_close_locked(live *l, const char *result, const char *why) {
        if (!l->outcome)
                return;
        json_t *x = evaluation_of(l->obj, json_string_value(json_object_get(l->outcome, "outcome_id")));
        json_decref(TAKE_PTR(l->outcome));
        if (!x)
                return;
        char now[STORE_TIME_MAX];
        v1_now_time(now);
        json_object_set_new(x, "result", json_string(result));
        json_object_set_new(x, "explanation", json_string(why));
        json_object_set_new(x, "completed_at", json_string(now));
        hull_error e = {0};
        if (store_update(l->g->cfg.store, STORE_SESSION, l->obj, &e) < 0)
                dlog_log(l->g->cfg.log, DLOG_WARN, "event=v1-session-update-failed session=%s error=\"%s\"", l->id,
                         e.msg);
}

void v1_outcomes_cut_locked(live *l) {
        char now[STORE_TIME_MAX];
        v1_now_time(now);
        size_t i;
        json_t *x;
        bool changed = false;
        json_array_foreach(json_object_get(l->obj, "outcome_evaluations"), i, x) {
                const char *res = json_string_value(json_object_get(x, "result")) ?: "";
                if (strcmp(res, "pending") != 0 && strcmp(res, "running") != 0 && strcmp(res, "evaluating") != 0)
                        continue;
                json_object_set_new(x, "result", json_string("interrupted"));
                json_object_set_new(
                        x, "explanation",
                        json_string("hull serve stopped while this outcome was worked on; define it again"));
                json_object_set_new(x, "completed_at", json_string(now));
                changed = true;
        }
        hull_error e = {0};
        if (changed && store_update(l->g->cfg.store, STORE_SESSION, l->obj, &e) < 0)
                dlog_log(l->g->cfg.log, DLOG_WARN, "event=v1-session-update-failed session=%s error=\"%s\"", l->id,
                         e.msg);
}

/* ---- the grader ---- */

/* The verdict in the grader's text: {"result", "explanation"}, else its first word. */
static void verdict_of(const char *text, const char **ret_result, char **ret_expl) {
        const char *open = strchr(text, '{'), *close = strrchr(text, '}');
        json_auto_t *j = open && close > open ? json_loadb(open, (size_t) (close - open + 1), 0, NULL) : NULL;
        const char *res = json_string_value(json_object_get(j, "result"));
        const char *expl = json_string_value(json_object_get(j, "explanation"));
        static const char *const known[] = {"satisfied", "needs_revision", "failed"};
        *ret_result = NULL;
        for (size_t i = 0; i < ELEMENTSOF(known) && !*ret_result; i++)
                if ((res && strcmp(res, known[i]) == 0) ||
                    (!res && strncmp(text + strspn(text, " \n\t\"*"), known[i], strlen(known[i])) == 0))
                        *ret_result = known[i];
        if (!*ret_result) {
                *ret_result = "failed";
                if (asprintf(ret_expl,
                             "the grader's answer names no verdict (satisfied, needs_revision, failed): %.300s",
                             text) < 0)
                        *ret_expl = NULL;
                return;
        }
        *ret_expl = strndup(expl ? expl : text, V1_GRADER_EXPLANATION_MAX);
}

static json_t *usage_of(const model_usage *u) {
        return json_pack("{s:I, s:I, s:I, s:I}", "input_tokens", (json_int_t) u->input_tokens, "output_tokens",
                         (json_int_t) u->output_tokens, "cache_creation_input_tokens",
                         (json_int_t) u->cache_creation_input_tokens, "cache_read_input_tokens",
                         (json_int_t) u->cache_read_input_tokens);
}

/* One grading call: *ret_result and *ret_expl (malloc'd), *ret_usage. */
static void grade_call(live *l, const json_t *o, const char *answer, const char **ret_result, char **ret_expl,
                       model_usage *ret_usage) {
        _cleanup_free_ char *prompt = NULL;
        if (asprintf(&prompt, "The task:\n%s\n\nThe rubric:\n%s\n\nThe agent's answer:\n%.*s",
                     json_string_value(json_object_get(o, "description")) ?: "",
                     json_string_value(json_object_get(o, "rubric")) ?: "", (int) V1_GRADER_ANSWER_MAX,
                     answer && answer[0] ? answer : "(the agent gave no text)") < 0) {
                *ret_result = "failed";
                *ret_expl = strdup("out of memory");
                return;
        }
        json_auto_t *msgs =
                json_pack("[{s:s, s:[{s:s, s:s}]}]", "role", "user", "content", "type", "text", "text", prompt);
        model_request req = {.system = GRADER_SYSTEM, .messages = msgs};
        model_call_opts opts = {.cancel = &l->interrupt, .deadline_mono_ms = now_mono_ms() + V1_GRADER_WALL_MS};
        model_response resp = {0};
        model_failure fail = {0};
        hull_error e = {0};
        int r = msgs ? model_call(l->model, &req, &opts, &resp, &fail, &e) : hull_err(&e, -ENOMEM, "out of memory");
        *ret_usage = resp.usage;
        if (r < 0) {
                *ret_result = atomic_load(&l->interrupt) ? "interrupted" : "failed";
                if (asprintf(ret_expl, "the grading call failed: %s", e.msg) < 0)
                        *ret_expl = NULL;
        } else {
                _cleanup_dynbuf_ dynbuf t;
                dynbuf_init(&t, MODEL_ANSWER_MAX);
                size_t i;
                const json_t *b;
                json_array_foreach(json_object_get(resp.message, "content"), i, b) {
                        const json_t *x = json_object_get(b, "text");
                        if (x)
                                (void) dynbuf_add(&t, json_string_value(x), json_string_length(x));
                }
                verdict_of(t.len ? t.buf : "", ret_result, ret_expl);
        }
        model_response_done(&resp);
}

/* A grading call on a thread of its own, while the worker logs span.outcome_evaluation_ongoing
 * every V1_OUTCOME_HEARTBEAT_MS (the liveness heartbeat). */
typedef struct grading {
        live *l;
        const json_t *o;
        const char *answer;
        const char *result;
        char *expl;
        model_usage usage;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool done;
} grading;

static void *grading_main(void *arg) {
        grading *gr = arg;
        grade_call(gr->l, gr->o, gr->answer, &gr->result, &gr->expl, &gr->usage);
        pthread_mutex_lock(&gr->lock);
        gr->done = true;
        pthread_cond_signal(&gr->cond);
        pthread_mutex_unlock(&gr->lock);
        return NULL;
}

static void grade_with_heartbeat(grading *gr, const json_t *oid, json_int_t iter) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&gr->cond, &ca);
        pthread_condattr_destroy(&ca);
        pthread_mutex_init(&gr->lock, NULL);
        pthread_t t;
        if (pthread_create(&t, NULL, grading_main, gr) != 0) {
                grading_main(gr); /* no thread: the call without a heartbeat */
        } else {
                pthread_mutex_lock(&gr->lock);
                while (!gr->done) {
                        struct timespec ts;
                        clock_gettime(CLOCK_MONOTONIC, &ts);
                        ts.tv_sec += V1_OUTCOME_HEARTBEAT_MS / 1000;
                        if (pthread_cond_timedwait(&gr->cond, &gr->lock, &ts) != ETIMEDOUT || gr->done)
                                continue;
                        pthread_mutex_unlock(&gr->lock);
                        pthread_mutex_lock(&gr->l->lock);
                        json_t *ev[1] = {json_pack("{s:s, s:O, s:I}", "type", "span.outcome_evaluation_ongoing",
                                                   "outcome_id", oid, "iteration", iter)};
                        v1_log_server_locked(gr->l, ev, 1);
                        pthread_mutex_unlock(&gr->l->lock);
                        pthread_mutex_lock(&gr->lock);
                }
                pthread_mutex_unlock(&gr->lock);
                pthread_join(t, NULL);
        }
        pthread_cond_destroy(&gr->cond);
        pthread_mutex_destroy(&gr->lock);
}

int v1_outcome_grade(live *l, const char *answer) {
        pthread_mutex_lock(&l->lock);
        json_auto_t *o = json_deep_copy(l->outcome);
        pthread_mutex_unlock(&l->lock);
        if (!o)
                return 0;
        json_int_t iter = json_integer_value(json_object_get(o, "iteration"));
        json_int_t max = json_integer_value(json_object_get(o, "max_iterations"));
        json_t *oid = json_object_get(o, "outcome_id");
        char start_id[STORE_ID_MAX];
        v1_id_new("sevt_", start_id);
        pthread_mutex_lock(&l->lock);
        json_t *evs[2] = {json_pack("{s:s, s:s, s:O, s:I}", "id", start_id, "type", "span.outcome_evaluation_start",
                                    "outcome_id", oid, "iteration", iter),
                          json_pack("{s:s, s:O, s:I}", "type", "span.outcome_evaluation_ongoing", "outcome_id", oid,
                                    "iteration", iter)};
        v1_log_server_locked(l, evs, 2);
        pthread_mutex_unlock(&l->lock);

        grading gr = {.l = l, .o = o, .answer = answer};
        grade_with_heartbeat(&gr, oid, iter);
        const char *result = gr.result;
        _cleanup_free_ char *expl = gr.expl;
        model_usage u = gr.usage;
        bool again = strcmp(result, "needs_revision") == 0;
        if (again && iter + 1 >= max) {
                result = "max_iterations_reached";
                again = false;
        }

        pthread_mutex_lock(&l->lock);
        json_t *end = json_pack("{s:s, s:O, s:I, s:s, s:s, s:s?, s:o}", "type", "span.outcome_evaluation_end",
                                "outcome_id", oid, "iteration", iter, "outcome_evaluation_start_id", start_id, "result",
                                result, "explanation", expl, "usage", usage_of(&u));
        json_t *one[1] = {end};
        v1_log_server_locked(l, one, 1);
        if (again && l->outcome && !l->deleted) {
                json_object_set_new(l->outcome, "iteration", json_integer(iter + 1));
                _cleanup_free_ char *text = NULL;
                if (asprintf(&text,
                             "[grader] Your answer does not yet satisfy the rubric (evaluation %lld of at most "
                             "%lld): %s\n\nRevise your work and answer again.",
                             (long long) iter + 1, (long long) max, expl ? expl : "") >= 0)
                        json_array_insert_new(l->queue, 0, json_pack("{s:s, s:[]}", "text", text, "queued"));
        } else if (strcmp(result, "max_iterations_reached") == 0 && l->outcome && !l->deleted) {
                /* one last turn, not graded: the agent says what is still missing, then idles */
                json_decref(TAKE_PTR(l->outcome));
                _cleanup_free_ char *text = NULL;
                if (asprintf(&text,
                             "[grader] The outcome reached its limit of %lld evaluations without satisfying the "
                             "rubric: %s\n\nSay briefly what is still missing; do not start new work.",
                             (long long) max, expl ? expl : "") >= 0)
                        json_array_insert_new(l->queue, 0, json_pack("{s:s, s:[]}", "text", text, "queued"));
                again = true;
        } else {
                json_decref(TAKE_PTR(l->outcome));
                json_t *idle[1] = {json_pack("{s:s, s:{s:s}, s:n}", "type", "session.status_idle", "stop_reason",
                                             "type", "end_turn", "stop_details")};
                v1_log_server_locked(l, idle, 1);
                again = false;
        }
        pthread_mutex_unlock(&l->lock);
        return again;
}
