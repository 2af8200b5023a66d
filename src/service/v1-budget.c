/* v1-budget.c: a /v1 session's list cost and its budget (cma-api-more.md §7.5). The operator's
 * price table is config.json's "pricing" ({"<model>": {"input", "output", "cache_read",
 * "cache_write"}}, US dollars per million tokens, checked by settings.c); a session's cost is its
 * usage (the tokens of every model request and grading call, summed in the session object) priced
 * at its model's rates, in cents; its budget, max_list_cost.amount, is cents too. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v1-run-internal.h"

const char *v1_session_model(const v1_engine_config *cfg, const json_t *obj) {
        const settings *st = cfg->settings;
        const char *mid =
                json_string_value(json_object_get(json_object_get(json_object_get(obj, "agent"), "model"), "id"));
        if (st && (cfg->force_model || !mid || !mid[0]))
                return st->model.model;
        return mid;
}

int v1_price_of(const v1_engine_config *cfg, const char *model, v1_price *ret) {
        const json_t *p =
                model && cfg->settings ? json_object_get(json_object_get(cfg->settings->file, "pricing"), model) : NULL;
        if (!json_is_object(p))
                return -ENOENT;
        *ret = (v1_price){
                .input = json_number_value(json_object_get(p, "input")),
                .output = json_number_value(json_object_get(p, "output")),
                .cache_read = json_number_value(json_object_get(p, "cache_read")),
                .cache_write = json_number_value(json_object_get(p, "cache_write")),
        };
        return 0;
}

static double tokens(const json_t *o, const char *key) {
        return (double) json_integer_value(json_object_get(o, key));
}

double v1_list_cost_cents(const v1_engine_config *cfg, const json_t *obj) {
        v1_price p;
        if (v1_price_of(cfg, v1_session_model(cfg, obj), &p) < 0)
                return -1;
        const json_t *u = json_object_get(obj, "usage");
        const json_t *cc = json_object_get(u, "cache_creation");
        double usd =
                tokens(u, "input_tokens") * p.input + tokens(u, "output_tokens") * p.output +
                tokens(u, "cache_read_input_tokens") * p.cache_read +
                (tokens(cc, "ephemeral_5m_input_tokens") + tokens(cc, "ephemeral_1h_input_tokens")) * p.cache_write;
        return usd / 1e6 * 100.0;
}

double v1_budget_cents(const json_t *obj) {
        const json_t *b = json_object_get(obj, "budget");
        const char *amount = json_string_value(json_object_get(json_object_get(b, "max_list_cost"), "amount"));
        return amount ? strtod(amount, NULL) : -1;
}

bool v1_budget_reached(const v1_engine_config *cfg, const json_t *obj) {
        double max = v1_budget_cents(obj);
        if (max < 0)
                return false;
        double cost = v1_list_cost_cents(cfg, obj);
        return cost < 0 || cost >= max; /* a model with no price: nothing can be spent */
}

void v1_usage_price(const v1_engine_config *cfg, json_t *obj) {
        json_t *u = json_object_get(obj, "usage");
        double cost = v1_list_cost_cents(cfg, obj);
        if (!json_is_object(u) || cost < 0)
                return;
        char amount[32];
        snprintf(amount, sizeof(amount), "%.0f", ceil(cost)); /* a cent begun counts: the cap fires at or before */
        json_object_set_new(u, "list_cost", json_pack("{s:s, s:s}", "amount", amount, "currency", "USD"));
}

int v1_budget_admit(const v1_engine_config *cfg, const json_t *obj, v1_err *err) {
        double max = v1_budget_cents(obj);
        if (max < 0)
                return 0;
        const char *model = v1_session_model(cfg, obj);
        v1_price p;
        if (v1_price_of(cfg, model, &p) < 0)
                return v1_fail(err, 400, "model_not_budgetable",
                               "budget: the session's model '%.128s' has no price, so its spending cannot be measured: "
                               "the operator adds it to config.json's \"pricing\" (US dollars per million tokens, see "
                               "docs/REFERENCE.md), or send the session without a budget",
                               model ? model : "(none)");
        double cost = v1_list_cost_cents(cfg, obj);
        if (cost > 0 && max <= cost)
                return v1_fail(err, 400, "budget_not_raised",
                               "budget.max_list_cost.amount: %.0f cents is not above what the session has already "
                               "spent (%.0f cents, usage.list_cost): raise it above that, or send \"budget\": null",
                               max, ceil(cost));
        return 0;
}

int v1_engine_budget_admit(v1_engine *g, const json_t *session, v1_err *err) {
        return v1_budget_admit(&g->cfg, session, err);
}
