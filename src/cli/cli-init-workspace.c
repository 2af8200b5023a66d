/* cli-init-workspace.c: `hull init DIR`: a new agent workspace: agent.json (the body of POST
 * /v1/agents, checked by v1_agent_create), skills/ with one example skill, config.json (the
 * commented settings hull init writes in $HULL_HOME) and a short README.md saying how to use
 * them. It never overwrites: every file is checked first, none is written when one exists, and
 * each is created with O_EXCL. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "fs-util.h"
#include "macro.h"
#include "v1-shape.h"

static const char skill_md[] = "---\n"
                               "name: example\n"
                               "description: An example skill: say when the model should use it. Replace it with "
                               "your own.\n"
                               "---\n"
                               "# Example\n\n"
                               "Instructions the model reads when it uses this skill: steps, conventions, the scripts "
                               "beside this file and how to run them (the skill is read-only at /skills/example/ in "
                               "the sandbox).\n";

static const char readme_fmt[] =
        "# %s: a hull agent workspace\n\n"
        "Made by `hull init`. What is here:\n\n"
        "- `agent.json`: the agent, as the body of `POST /v1/agents` (name, model, system prompt, tools).\n"
        "- `skills/`: skills, one directory with a `SKILL.md` each (`skills/example/` is a template).\n"
        "- `config.json`: hull's settings (the model's provider, base URL; commented examples). hull reads it\n"
        "  from `$HULL_HOME`: `export HULL_HOME=$PWD` makes this directory hull's state directory.\n\n"
        "Run it:\n\n"
        "```sh\n"
        "export HULL_HOME=$PWD ANTHROPIC_API_KEY=...   # or OPENAI_API_KEY; see config.json\n"
        "hull serve &                                  # the /v1 API on http://127.0.0.1:8080\n"
        "hull skill add skills/example                 # upload a skill; add its id to agent.json's \"skills\"\n"
        "H='-H anthropic-version:2023-06-01 -H anthropic-beta:managed-agents-2026-04-01 -H "
        "content-type:application/json'\n"
        "curl -s $H http://127.0.0.1:8080/v1/agents -d @agent.json   # the agent's id\n"
        "```\n\n"
        "Then open a session with the official SDK (`client.beta.sessions.create`), `hull chat --server`, or\n"
        "curl: see hull's docs/API.md. `hull capabilities` lists what the API supports.\n";

#define NAME_MAX_BYTES 64U /* bytes of the agent's name made from DIR */

/* name from DIR's last component: letters, digits, - and _ (others as -), at most 64 bytes */
static void name_of(const char *dir, char ret[NAME_MAX_BYTES + 1]) {
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
                n--;
        const char *b = dir + n;
        while (b > dir && b[-1] != '/')
                b--;
        size_t k = 0;
        for (; b < dir + n && k < NAME_MAX_BYTES; b++)
                ret[k++] = (char) ((*b >= 'a' && *b <= 'z') || (*b >= 'A' && *b <= 'Z') || (*b >= '0' && *b <= '9') ||
                                                   *b == '_' || *b == '-'
                                           ? *b
                                           : '-');
        ret[k] = '\0';
        if (k == 0 || strcmp(ret, "-") == 0 || strcmp(ret, "--") == 0)
                snprintf(ret, NAME_MAX_BYTES + 1, "agent");
}

static char *agent_json(const char *name, const char *model) {
        static const char *const tools[] = {"bash", "read", "write", "edit", "glob", "grep"};
        json_auto_t *configs = json_array();
        for (size_t i = 0; configs && i < ELEMENTSOF(tools); i++)
                if (json_array_append_new(configs, json_pack("{s:s,s:b,s:{s:s}}", "name", tools[i], "enabled", 1,
                                                             "permission_policy", "type", "always_allow")) < 0)
                        return NULL;
        if (!configs || json_array_append_new(configs, json_pack("{s:s,s:b,s:{s:s}}", "name", "web_fetch", "enabled", 1,
                                                                 "permission_policy", "type", "always_ask")) < 0)
                return NULL;
        json_auto_t *body =
                json_pack("{s:s,s:s,s:s,s:[{s:s,s:{s:b},s:O}],s:[],s:{s:s}}", "name", name, "model", model, "system",
                          "You are a capable assistant working in a sandbox. Your workspace is "
                          "/workspace: read, write and run code there. Say briefly what you did.",
                          "tools", "type", "agent_toolset_20260401", "default_config", "enabled", 0, "configs", configs,
                          "skills", "metadata", "made_by", "hull init");
        return body ? json_dumps(body, JSON_INDENT(2)) : NULL;
}

/* Create path (O_EXCL) with text. */
static int write_new(const char *path, const char *text, hull_error *e) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                return hull_err(e, -errno, "init: cannot create %s", path);
        int r = loop_write(fd, text, strlen(text));
        if (r < 0)
                return hull_err(e, r, "init: cannot write %s", path);
        return 0;
}

int cli_init_workspace(const char *dir_arg, const char *model, const char *config_text, hull_error *e) {
        char name[NAME_MAX_BYTES + 1], paths[5][SBX_PATH_MAX], dir[SBX_PATH_MAX];
        size_t dn = strlen(dir_arg);
        while (dn > 1 && dir_arg[dn - 1] == '/') /* "ws/" is "ws" */
                dn--;
        if (dn >= sizeof(dir))
                return hull_fail(e, -ENAMETOOLONG, "init: %.200s: the path is too long", dir_arg);
        memcpy(dir, dir_arg, dn);
        dir[dn] = '\0';
        static const char *const rel[] = {"agent.json", "config.json", "README.md", "skills/example/SKILL.md",
                                          "skills"};
        name_of(dir, name);
        for (size_t i = 0; i < ELEMENTSOF(rel); i++) {
                struct stat st;
                if (path_join(paths[i], sizeof(paths[i]), dir, rel[i]) < 0)
                        return hull_fail(e, -ENAMETOOLONG, "init: %.200s: the path is too long", dir);
                /* skills/ may exist (a folder of skills already); no file of ours may */
                if (lstat(paths[i], &st) == 0 && !(i == 4 && S_ISDIR(st.st_mode)))
                        return hull_fail(e, -EEXIST,
                                         "init: %s exists: hull init never overwrites a workspace's files (move it "
                                         "away, or give another DIR)",
                                         paths[i]);
        }
        _cleanup_free_ char *agent = agent_json(name, model);
        if (!agent)
                return hull_fail(e, -ENOMEM, "init: out of memory");
        /* the agent file is what POST /v1/agents takes */
        json_auto_t *body = json_loads(agent, 0, NULL), *made = NULL;
        v1_err ve = {0};
        if (!body || v1_agent_create(body, "agent_check", "2026-01-01T00:00:00Z", &made, &ve) < 0)
                return hull_fail(e, -EINVAL, "init: the agent file would be refused: %s",
                                 body ? ve.msg : "out of memory");
        _cleanup_free_ char *readme = NULL;
        char skills_dir[SBX_PATH_MAX], example_dir[SBX_PATH_MAX];
        if (asprintf(&readme, readme_fmt, name) < 0)
                return hull_fail(e, -ENOMEM, "init: out of memory");
        if (path_join(skills_dir, sizeof(skills_dir), dir, "skills") < 0 ||
            path_join(example_dir, sizeof(example_dir), dir, "skills/example") < 0)
                return hull_fail(e, -ENAMETOOLONG, "init: %.200s: the path is too long", dir);
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return hull_err(e, -errno, "init: cannot make the directory %s", dir);
        if (mkdir(skills_dir, 0755) < 0 && errno != EEXIST)
                return hull_err(e, -errno, "init: cannot make %s", skills_dir);
        if (mkdir(example_dir, 0755) < 0)
                return hull_err(e, -errno, "init: cannot make %s", example_dir);
        int r;
        if ((r = write_new(paths[0], agent, e)) < 0 || (r = write_new(paths[1], config_text, e)) < 0 ||
            (r = write_new(paths[2], readme, e)) < 0 || (r = write_new(paths[3], skill_md, e)) < 0)
                return r;
        printf("made the workspace %s:\n"
               "  %s  the agent \"%s\" (model %s), the body of POST /v1/agents\n"
               "  %s  hull's settings (read from $HULL_HOME: export HULL_HOME=%s)\n"
               "  %s  an example skill (hull skill add %s)\n"
               "  %s  how to run it\n",
               dir, paths[0], name, model, paths[1], dir, paths[3], example_dir, paths[2]);
        return 0;
}
