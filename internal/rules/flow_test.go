package rules

import (
	"strconv"
	"strings"
	"testing"
)

// flowCase is one file reviewed as wholly added (or, with before, as a
// modification): want lists "rule@line severity" for the injection
// rules' hits ("rule@line src|unk|low"), or is empty for none.
type flowCase struct {
	name, path, before, code string
	want                     []string
}

func runFlowCases(t *testing.T, cases []flowCase) {
	t.Helper()
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	runFlowCasesOn(t, s, cases)
}

func runFlowCasesOn(t *testing.T, s *Set, cases []flowCase) {
	t.Helper()
	for _, c := range cases {
		var old []byte
		if c.before != "" {
			old = []byte(c.before)
		}
		var got []string
		for _, h := range s.MatchFile(DiffFile(c.path, old, []byte(c.code)), []string{"security_reviewer"}) {
			if !isInjectionRule(h.RuleID) {
				continue
			}
			// src: derived from a source (the rule's own confidence and
			// severity); unk: dynamic, origin unknown; low: test code.
			r := s.byID[h.RuleID]
			kind := "src"
			switch {
			case h.Severity == "low":
				kind = "low"
			case h.Confidence != r.Confidence || h.Severity != r.Severity:
				kind = "unk"
				if u := r.Flow.UnknownOrigin; u == nil || h.Confidence != u.Confidence || sevRank(h.Severity) > sevRank(u.Severity) {
					kind = "bad-level:" + h.Severity
				}
			}
			got = append(got, h.RuleID+"@"+strconv.Itoa(h.StartLine)+" "+kind)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: hits %v, want %v\n%s", c.name, got, c.want, c.code)
		}
	}
}

func isInjectionRule(id string) bool {
	for _, p := range []string{"sec.sql-", "sec.command-injection-", "sec.eval-", "sec.xss-inner-html"} {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

func TestFlowSQL(t *testing.T) {
	runFlowCases(t, []flowCase{
		{name: "go sink line, query built earlier from a request value", path: "api/search.go", code: `package api

func Search(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	query := "SELECT id FROM users WHERE name = '" + name + "'"
	rows, err := db.Query(query)
	_ = rows
	_ = err
}
`, want: []string{"sec.sql-concat@6 src"}},
		{name: "go parameterised", path: "api/search.go", code: `package api

func Search(db *sql.DB, name string) {
	db.Query("SELECT id FROM users WHERE name = $1", name)
	db.QueryRow("SELECT 1")
}
`},
		{name: "go unknown origin is medium", path: "store/x.go", code: `package store

func Del(db *sql.DB, id string) {
	q := fmt.Sprintf("DELETE FROM t WHERE id = %s", id)
	db.Exec(q)
}
`, want: []string{"sec.sql-concat@5 unk"}},
		{name: "go one-level copy", path: "store/x.go", code: `package store

func Del(db *sql.DB, id string) {
	q := "DELETE FROM t WHERE id = " + id
	stmt := q
	db.Exec(stmt)
}
`, want: []string{"sec.sql-concat@6 unk"}},
		{name: "java executeQuery(String.format(...)) multi-line", path: "src/main/java/a/Dao.java", code: `class Dao {
  ResultSet find(Statement st, String name) throws Exception {
    return st.executeQuery(
        String.format("SELECT * FROM users WHERE name = '%s'",
            name));
  }
}
`, want: []string{"sec.sql-concat@3 unk"}},
		{name: "java Spring @RequestParam is a source", path: "src/main/java/a/Ctl.java", code: `class Ctl {
  List<Map<String, Object>> find(@RequestParam String name) {
    String sql = "SELECT * FROM users WHERE name = '" + name + "'";
    return jdbc.queryForList(sql);
  }
}
`, want: []string{"sec.sql-concat@4 src"}},
		{name: "java constant-only concatenation", path: "src/main/java/a/Dao.java", code: `class Dao {
  static final String COLS = "id, name";
  ResultSet all(Statement st) throws Exception {
    return st.executeQuery("SELECT " + COLS + " FROM users");
  }
}
`},
		{name: "java executor.execute is not SQL", path: "src/main/java/a/Jobs.java", code: `class Jobs {
  void run(Executor ex, String name) {
    ex.execute(() -> log("job " + name));
    ex.execute(makeTask("job " + name));
  }
}
`},
		{name: "python format() with no arguments, parameterised, constants", path: "app/db.py", code: `def f(cur, x):
    cur.execute('SELECT id FROM t WHERE a = 1'.format())
    cur.execute("SELECT id FROM t WHERE a = %s", (x,))
    cur.execute("SELECT 1")
    q = "SELECT id " + "FROM t"
    cur.execute(q)
`},
		{name: "python source through request.args, sink only changed", path: "app/views.py",
			before: `def view(request, cur):
    q = "SELECT * FROM t WHERE name = '" + request.args["n"] + "'"
    return None
`,
			code: `def view(request, cur):
    q = "SELECT * FROM t WHERE name = '" + request.args["n"] + "'"
    return cur.execute(q)
`, want: []string{"sec.sql-fstring-python@3 src"}},
		{name: "python append with +=", path: "app/db.py", code: `def f(cur, name):
    q = "SELECT * FROM t WHERE 1=1"
    if name:
        q += " AND name = '%s'" % name
    cur.execute(q)
`, want: []string{"sec.sql-fstring-python@5 unk"}},
		{name: "python a reassignment to a constant dominates", path: "app/db.py", code: `def f(cur, name):
    q = "SELECT * FROM t WHERE name = '" + name + "'"
    q = "SELECT * FROM t"
    cur.execute(q)
`},
		{name: "python sanitizer in the construction", path: "app/db.py", code: `def f(cur, n):
    cur.execute("SELECT * FROM t LIMIT " + str(int(n)))
`},
		{name: "ts template with source", path: "src/repo.ts", code: `export async function get(req: Request) {
  const id = req.params.id;
  return pool.query(` + "`SELECT * FROM t WHERE id = ${id}`" + `);
}
`, want: []string{"sec.sql-template-js@3 src"}},
		{name: "js constant template", path: "src/repo.js", code: "const T = 'users';\nfunction all() { return db.query(`SELECT * FROM ${T}`); }\n"},
		{name: "ruby where with hash, placeholders and interpolation", path: "app/models/u.rb", code: `class U
  def self.f(name)
    where(name: name)
    where("name = ?", name)
    where("name = '#{name}'")
  end
end
`, want: []string{"sec.sql-interpolation-ruby@5 unk"}},
		{name: "kotlin template via variable", path: "app/src/main/kotlin/D.kt", code: `class D(val db: SQLiteDatabase) {
    fun f(t: String) {
        val q = "SELECT * FROM notes WHERE title = '$t'"
        db.rawQuery(q, null)
    }
}
`, want: []string{"sec.sql-template-kotlin@4 unk"}},
		{name: "csharp interpolated CommandText", path: "Data/R.cs", code: `class R {
  void F(SqlCommand cmd, string id) {
    cmd.CommandText = $"SELECT * FROM t WHERE id = {id}";
  }
}
`, want: []string{"sec.sql-concat@3 unk"}},
		{name: "php superglobal through a variable", path: "web/a.php", code: `<?php
function f($conn) {
  $id = $_GET['id'];
  $sql = "SELECT * FROM t WHERE id = $id";
  mysqli_query($conn, $sql);
}
`, want: []string{"sec.sql-concat@5 src"}},
		{name: "go WHERE clause built from placeholder fragments", path: "store/f.go", code: `package store

func Filter(db *sql.DB, name string, age int) {
	var conds []string
	var args []any
	if name != "" {
		conds = append(conds, "name = ?")
		args = append(args, name)
	}
	q := "SELECT id FROM users WHERE " + strings.Join(conds, " AND ") + " LIMIT " + strconv.Itoa(10)
	db.Query(q, args...)
}
`},
		{name: "python IN list of placeholders", path: "app/db.py", code: `def many(cur, ids):
    marks = ",".join(["%s"] * len(ids))
    cur.execute("SELECT * FROM t WHERE id IN (%s)" % marks, ids)
`},
		{name: "js tagged template with a constant append", path: "server/r.js", code: "async function f(req) {\n  return pool.query(SQL`SELECT * FROM t WHERE id = ${req.params.id}`.append(' ORDER BY id'));\n}\n"},
		{name: "numeric-only format verbs", path: "store/n.go", code: `package store

func Page(db *sql.DB, n int) {
	q := fmt.Sprintf("SELECT * FROM t LIMIT %d OFFSET %d", n, n*2)
	db.Query(q)
}
`},
		{name: "python numeric % formatting and an empty tuple", path: "app/db.py", code: `def f(cur, n):
    cur.execute("SELECT * FROM t LIMIT %d" % n)
    q = 'SELECT * FROM t' % ()
    cur.execute(q)
`},
		{name: "go inner-block declaration shadows", path: "store/s.go", code: `package store

func F(db *sql.DB, arg string) {
	q := "SELECT * FROM t WHERE id = 1"
	{
		q := "x"
		q += arg
		_ = q
	}
	db.Query(q)
}
`},
		{name: "ruby array form of where binds its values", path: "app/models/p.rb", code: `class P
  def self.f
    where(["admin = ?", params[:admin]])
  end
end
`},
		{name: "a SQL call in test code is advisory", path: "store/users_test.go", code: `package store

func TestX(t *testing.T) {
	db.Exec("DELETE FROM t WHERE id = " + id)
}
`, want: []string{"sec.sql-concat@4 low"}},
	})
}

func TestFlowCommandAndEval(t *testing.T) {
	runFlowCases(t, []flowCase{
		{name: "python subprocess shell=True with dynamic command", path: "app/run.py", code: `import subprocess

def run(request):
    name = request.form["name"]
    subprocess.check_output("grep " + name + " /var/log/app.log",
                            shell=True)
`, want: []string{"sec.command-injection-python@5 src"}},
		{name: "python subprocess without shell, constant shell command", path: "app/run.py", code: `import subprocess

def run(name):
    subprocess.check_output(["grep", name, "/var/log/app.log"])
    subprocess.call("make all", shell=True)
`},
		{name: "python os.popen via variable", path: "app/run.py", code: `import os

def run(host):
    cmd = "ping -c 1 {}".format(host)
    return os.popen(cmd).read()
`, want: []string{"sec.command-injection-python@5 unk"}},
		{name: "python flask.request through a variable, a bare command, bash -c in a list", path: "app/run.py", code: `import flask, os, subprocess

def a():
    p = flask.request.args.get("p")
    os.system(p)

def b(cmd):
    os.system(cmd)
    subprocess.run(["bash", "-c", cmd])
    os.execl("/bin/sh", "/bin/sh", "-c", cmd)
    subprocess.run(["bash", "-c", "make all"])
`, want: []string{"sec.command-injection-python@5 src", "sec.command-injection-python@8 unk", "sec.command-injection-python@9 unk", "sec.command-injection-python@10 unk"}},
		{name: "python eval with a leading quote and a source", path: "app/plugin.py", code: `def load(request):
    eval("import " + request.args.get("mod"))
`, want: []string{"sec.eval-python@2 src"}},
		{name: "python eval of a constant", path: "app/plugin.py", code: "def f():\n    eval(\"1 + 1\")\n"},
		{name: "js exec with a dynamic argument from the request", path: "server/a.js", code: `const cp = require('child_process');
app.get('/x', (req, res) => {
  const file = req.query.file;
  cp.exec('cat ' + file, (e, out) => res.send(out));
});
`, want: []string{"sec.command-injection-js@4 src"}},
		{name: "js exec of config values in a release script", path: "scripts/release.js", code: "const { exec } = require('child_process');\nconst tag = process.env.TAG;\nexec(`git tag ${tag} && git push origin ${tag}`);\n"},
		{name: "js exec with a constant", path: "server/a.js", code: "const { exec } = require('child_process');\nexec('git rev-parse HEAD');\n"},
		{name: "java Runtime exec bash -c input", path: "src/main/java/a/R.java", code: `class R {
  void f(HttpServletRequest request) throws Exception {
    String input = request.getParameter("q");
    Runtime.getRuntime().exec(new String[] {"bash", "-c", input});
  }
}
`, want: []string{"sec.command-injection-jvm@4 src"}},
		{name: "java ProcessBuilder with constant shell command", path: "src/main/java/a/R.java", code: `class R {
  void f() throws Exception {
    new ProcessBuilder("bash", "-c", "ls -la").start();
  }
}
`},
		{name: "ruby open pipe with % formatting", path: "app/x.rb", code: `class X
  def f
    open("|%s" % params[:cmd])
  end
end
`, want: []string{"sec.command-injection-ruby@3 src"}},
		{name: "ruby backticks and system with interpolation", path: "app/x.rb", code: "def f(dir)\n  `ls #{dir}`\n  system(\"rm -rf #{dir}\")\n  system(\"rm\", \"-rf\", dir)\nend\n",
			want: []string{"sec.command-injection-ruby@2 unk", "sec.command-injection-ruby@3 unk"}},
		{name: "go sh -c with a variable command", path: "internal/x/run.go", code: `package x

func Run(cmdline string) error {
	return exec.Command("sh", "-c", cmdline).Run()
}
`, want: []string{"sec.command-injection-go@4 unk"}},
		{name: "js eval of the request body", path: "src/calc.js", code: "function f(req) {\n  return eval(req.body.code);\n}\n", want: []string{"sec.eval-js@2 src"}},
		{name: "xss from location.hash", path: "web/a.js", code: "const h = decodeURIComponent(location.hash.slice(1));\ndocument.body.innerHTML = '<b>' + h + '</b>';\n", want: []string{"sec.xss-inner-html@2 src"}},
		{name: "xss sanitized", path: "web/a.js", code: "el.innerHTML = DOMPurify.sanitize(html);\nel.innerHTML = '';\n"},
	})
}

// A format string held in a name (a constant or a local) is the text
// value_pattern reads; values put in a tuple/dict that a format or %
// consumes count as formatted into the string.
func TestFlowBoundFormatAndContainers(t *testing.T) {
	runFlowCases(t, []flowCase{
		{name: "java String.format with a local template", path: "src/main/java/a/Inv.java", code: `class Inv {
  void purge(Statement st, String owner) throws Exception {
    String tmpl = "DELETE FROM invoices WHERE owner = '%s'";
    st.executeUpdate(String.format(tmpl, owner));
  }
}
`, want: []string{"sec.sql-concat@4 unk"}},
		{name: "java String.format with a non-SQL template", path: "src/main/java/a/Inv.java", code: `class Inv {
  void note(Statement st, String owner) throws Exception {
    String tmpl = "invoice-%s";
    st.execute(String.format(tmpl, owner));
  }
}
`},
		{name: "go Sprintf with a file-level const template", path: "store/inv.go", code: `package store

const listTmpl = "SELECT id FROM invoices ORDER BY %s"

func List(db *sql.DB, col string) {
	db.Query(fmt.Sprintf(listTmpl, col))
}
`, want: []string{"sec.sql-concat@6 unk"}},
		{name: "go Sprintf with a const template of numbers only", path: "store/inv.go", code: `package store

const pageTmpl = "SELECT id FROM invoices LIMIT %d"

func Page(db *sql.DB, n int) {
	db.Query(fmt.Sprintf(pageTmpl, n))
	db.Query(listAll)
}
`},
		{name: "python % on a named template with a dict of request values", path: "app/inv.py", code: `TMPL = "SELECT * FROM invoices WHERE ref = '%(ref)s'"

def find(cur, request):
    cur.execute(TMPL % {"ref": request.args["ref"]})
`, want: []string{"sec.sql-fstring-python@4 src"}},
		{name: "python format(**dict) of a request value bound to a name", path: "app/inv.py", code: `def find(cur, request):
    args = {"ref": request.form["ref"]}
    cur.execute("SELECT * FROM invoices WHERE ref = '{ref}'".format(**args))
`, want: []string{"sec.sql-fstring-python@3 src"}},
		{name: "python tuple of a request value after %", path: "app/inv.py", code: `def find(cur, request):
    cur.execute("DELETE FROM invoices WHERE ref = '%s'" % (request.args["ref"],))
`, want: []string{"sec.sql-fstring-python@2 src"}},
		{name: "python dict of constants, and bind parameters in a dict", path: "app/inv.py", code: `def find(cur, request):
    cur.execute("SELECT * FROM invoices WHERE kind = '%(k)s'" % {"k": "paid"})
    cur.execute("SELECT * FROM invoices WHERE ref = %(ref)s", {"ref": request.args["ref"]})
`},
	})
}

// The construction changed but the sink did not: one finding at the sink
// (nearby context), with the construction as the supporting span.
func TestFlowSupportSpan(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	before := `def f(cur, name):
    q = "SELECT * FROM t WHERE name = %s"
    cur.execute(q)
`
	after := `def f(cur, name):
    q = ("SELECT * FROM t WHERE name = '%s'"
         % name)
    cur.execute(q)
`
	hits := s.MatchFile(DiffFile("app/db.py", []byte(before), []byte(after)), []string{"security_reviewer"})
	var got []Hit
	for _, h := range hits {
		if h.RuleID == "sec.sql-fstring-python" {
			got = append(got, h)
		}
	}
	if len(got) != 1 {
		t.Fatalf("hits = %+v, want one sec.sql-fstring-python", hits)
	}
	h := got[0]
	if h.StartLine != 4 || h.SupportStart != 2 || h.SupportEnd != 3 || h.Source != "nearby_context" {
		t.Fatalf("hit at %d support %d-%d source %s, want 4, 2-3, nearby_context", h.StartLine, h.SupportStart, h.SupportEnd, h.Source)
	}
	// Neither the sink nor the construction changed: nothing.
	after2 := after + "\n\ndef g():\n    return 1\n"
	for _, h := range s.MatchFile(DiffFile("app/db.py", []byte(after), []byte(after2)), []string{"security_reviewer"}) {
		if isInjectionRule(h.RuleID) {
			t.Fatalf("unchanged sink and construction: hit %+v", h)
		}
	}
}

func TestFlowErrors(t *testing.T) {
	base := `pack: t
rules:
  - id: t.f
    profile: security_reviewer
    category: security
    severity: high
    confidence: 0.9
    title: t
    message: m
    impact: i
    suggestion: s
    positive: [{path: a.py, code: "x"}]
    negative: [{path: a.py, code: "y"}]
`
	for _, c := range []struct{ extra, want string }{
		{"    flow: {}\n", "flow.sink: required"},
		{"    flow:\n      sink: {python: '(call) @sink'}\n", "needs a @sink capture and an @arg or @code"},
		{"    flow:\n      sink: {cobol: '(x) @sink @arg'}\n", `no grammar for language "cobol"`},
		{"    flow:\n      sink: {python: '(call) @sink @arg'}\n      sources: {python: '(call) @x'}\n", "needs a @source capture"},
		{"    flow:\n      sink: {python: '(call) @sink @arg'}\n      unknown_origin: {severity: medium, confidence: 0.5}\n", "only meaningful with sources"},
		{"    flow:\n      sink: {python: '(call) @sink @arg'}\n      sources: {python: '(call) @source'}\n      unknown_origin: {severity: huge, confidence: 0.5}\n", "unknown severity"},
		{"    flow:\n      sink: {python: '(call) @sink @arg'}\n      sanitizers: ['(']\n", "flow.sanitizers[0]"},
		{"    scope: file\n    flow:\n      sink: {python: '(call) @sink @arg'}\n", "only valid with scope: added"},
		{"    flow:\n      sink: {python: '(call) @sink @arg'}\n      param_origin: {severity: low, confidence: 0.5}\n", "flow.param_origin.languages"},
		{"    flow:\n      sink: {python: '(call) @sink @arg'}\n      param_origin: {languages: [python], severity: low, confidence: 2}\n", "flow.param_origin.confidence"},
	} {
		_, err := LoadPacks([]string{"p.yaml"}, [][]byte{[]byte(base + c.extra)})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "rule t.f") {
			t.Errorf("%q: err = %v, want one naming rule t.f and %q", c.extra, err, c.want)
		}
	}
}

// param_origin: a string-typed parameter handed to the sink as is (or
// through a copy) is reported at the low level; not a non-string
// parameter, not an argument bound on a prepared query object, not in a
// language the rule does not list.
// param_origin is not set in the built-in packs (audit-style); a user
// pack sets it: here, the injection pack with it added to two rules.
func TestFlowParamOrigin(t *testing.T) {
	packs, err := BuiltinPacks()
	if err != nil {
		t.Fatal(err)
	}
	src := string(packs["injection.yaml"])
	for _, c := range []struct{ id, lang string }{{"sec.sql-concat", "java"}, {"sec.command-injection-csharp", "csharp"}} {
		i := strings.Index(src, "  - id: "+c.id+"\n")
		j := strings.Index(src[i:], "    flow:\n")
		if i < 0 || j < 0 {
			t.Fatalf("%s: no flow in the injection pack", c.id)
		}
		at := i + j + len("    flow:\n")
		src = src[:at] + "      param_origin: {languages: [" + c.lang + "], severity: low, confidence: 0.5}\n" + src[at:]
	}
	s, err := LoadPacks([]string{"injection+param_origin"}, [][]byte{[]byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	runFlowCasesOn(t, s, []flowCase{
		{name: "java param copy", path: "src/main/java/a/Dao.java", code: `class Dao {
  void wipe(Statement st, String where) throws SQLException {
    String stmt = where;
    st.executeUpdate(stmt);
  }
}
`, want: []string{"sec.sql-concat@4 low"}},
		{name: "java int param", path: "src/main/java/a/Dao.java", code: `class Dao {
  void wipe(Statement st, Integer where) throws SQLException {
    st.executeUpdate(where);
  }
}
`},
		{name: "java prepared receiver binds", path: "src/main/java/a/Dao.java", code: `class Dao {
  void one(Connection c, String id) throws SQLException {
    PreparedStatement ps = c.prepareStatement("DELETE FROM t WHERE id = ?");
    ps.execute(id);
  }
}
`},
		{name: "go not listed", path: "store/run.go", code: `package store

func Run(db *sql.DB, q string) error {
	_, err := db.Exec(q)
	return err
}
`},
		{name: "csharp process param", path: "Ops/Run.cs", code: `class Run {
  void Go(string exe) {
    Process.Start(exe);
  }
}
`, want: []string{"sec.command-injection-csharp@3 low"}},
	})
}

// A Ruby if/case used as a value yields each branch's last statement,
// not every statement of its branches.
func TestFlowRubyIfValue(t *testing.T) {
	runFlowCases(t, []flowCase{
		{name: "ruby if value: request reads in branches, constants returned", path: "app/controllers/p_controller.rb", code: `class PController
  def show
    y = if c
      params[:x]
      "blah"
    elsif d
      "a"
    else
      params[:y]
      "blah"
    end
    Product.last("blah = '#{y}'")
  end
end
`},
		{name: "ruby case value: a branch returns a request value", path: "app/controllers/p_controller.rb", code: `class PController
  def show
    y = case kind
        when "a" then "name"
        else params[:sort]
        end
    Product.find(:all, :order => y)
  end
end
`, want: []string{"sec.sql-finder-options-ruby@7 src"}},
	})
}
