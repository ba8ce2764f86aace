// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package chart

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kquant/kquant/controllers/execution"
)

// securityPage lists every permission of kquant's ServiceAccounts and roles
// between the permissions markers; TestSecurityPagePermissions keeps that
// table equal to what the chart grants.
const (
	securityPage     = "docs/security.md"
	permissionsBegin = "<!-- permissions:begin -->"
	permissionsEnd   = "<!-- permissions:end -->"
	// updateCommand rewrites the table from the chart.
	updateCommand = "go test ./test/chart -run TestSecurityPagePermissions -update"
)

var updateSecurityPage = flag.Bool("update", false, "rewrite the permissions table of "+securityPage+" from the chart's default render, keeping each row's why")

// permission is one row of the table: what a subject may do to one resource
// through one role, and why it needs to.
type permission struct {
	subject, role, apiGroup, resource, verbs, scope, why string
}

var permissionHeader = permission{"subject", "role", "apiGroup", "resource", "verbs", "scope", "why"}

// key is what the chart decides: every cell but why.
func (p permission) key() string {
	return strings.Join([]string{p.subject, p.role, p.apiGroup, p.resource, p.verbs, p.scope}, " | ")
}

// whyKey finds a row's why again after its verbs changed.
func (p permission) whyKey() string {
	return strings.Join([]string{p.subject, p.role, p.apiGroup, p.resource, p.scope}, " | ")
}

func (p permission) row() string {
	return "| " + strings.Join([]string{p.subject, p.role, p.apiGroup, p.resource, p.verbs, p.scope, p.why}, " | ") + " |"
}

// TestSecurityPagePermissions renders the chart with default values and
// compares every permission it grants with the table of docs/security.md,
// both ways; every row must say why. With -update it rewrites the table
// from the chart, keeping the why of each row it still has.
func TestSecurityPagePermissions(t *testing.T) {
	const release, namespace = "kquant", "kquant-system"
	_, objs := render(t, release, namespace)
	granted, err := chartPermissions(objs, namespace)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tl.root, securityPage)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, tail, documented, err := splitPermissionsTable(string(data))
	if err != nil {
		t.Fatalf("%s: %v", securityPage, err)
	}
	if *updateSecurityPage {
		documented = keepWhys(granted, documented)
		if err := os.WriteFile(path, []byte(head+formatPermissions(documented)+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the permissions table of %s: %d rows", securityPage, len(documented))
	}

	inPage := map[string]bool{}
	for _, p := range documented {
		inPage[p.key()] = true
	}
	inChart := map[string]bool{}
	var unlisted, ungranted, unexplained []string
	for _, p := range granted {
		inChart[p.key()] = true
		if !inPage[p.key()] {
			unlisted = append(unlisted, p.row())
		}
	}
	for _, p := range documented {
		if !inChart[p.key()] {
			ungranted = append(ungranted, p.row())
		}
		if p.why == "" {
			unexplained = append(unexplained, p.row())
		}
	}
	if len(unlisted) > 0 {
		t.Errorf("the chart grants permissions that %s does not list; run `%s` and write each new row's why:\n%s",
			securityPage, updateCommand, strings.Join(unlisted, "\n"))
	}
	if len(ungranted) > 0 {
		t.Errorf("%s lists permissions that the chart does not grant; run `%s`:\n%s",
			securityPage, updateCommand, strings.Join(ungranted, "\n"))
	}
	if len(unexplained) > 0 {
		t.Errorf("%s lists permissions without a why:\n%s", securityPage, strings.Join(unexplained, "\n"))
	}
}

// chartPermissions lists every permission that the rendered objects grant:
// each rule of a Role or ClusterRole once for every subject bound to it; the
// run ClusterRole for the run ServiceAccount, which the manager binds at run
// time in each namespace with runs; and each role the chart binds to nobody
// (the roles for people) under the built-in roles it aggregates into, or as
// a cluster admin's to bind. A ServiceAccount with no permission at all
// gets a row saying so.
func chartPermissions(objs []*unstructured.Unstructured, releaseNS string) ([]permission, error) {
	roles := map[string]*rbacv1.ClusterRole{} // ClusterRole/name or Role/namespace/name
	var serviceAccounts []string
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole", "Role":
			role := &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
				return nil, fmt.Errorf("decoding %s: %w", key(o), err)
			}
			roles[key(o)] = role
		case "ServiceAccount":
			serviceAccounts = append(serviceAccounts, serviceAccountSubject(o.GetNamespace(), o.GetName(), releaseNS))
		}
	}

	merged := map[string]*permission{}
	grant := func(subject, roleKey, scope string) error {
		role, ok := roles[roleKey]
		if !ok {
			return fmt.Errorf("%s is bound but not rendered", roleKey)
		}
		kind, _, _ := strings.Cut(roleKey, "/")
		for _, p := range expandRules(subject, kind+" "+role.Name, scope, role.Rules) {
			if m, ok := merged[p.whyKey()]; ok {
				m.verbs = joinVerbs(m.verbs, p.verbs)
			} else {
				merged[p.whyKey()] = &p
			}
		}
		return nil
	}

	bound := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "RoleBinding" {
			continue
		}
		binding := &rbacv1.RoleBinding{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, binding); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", key(o), err)
		}
		roleKey, scope := "ClusterRole/"+binding.RoleRef.Name, "cluster"
		if o.GetKind() == "RoleBinding" {
			scope = namespaceScope(o.GetNamespace(), releaseNS)
			if binding.RoleRef.Kind == "Role" {
				roleKey = "Role/" + o.GetNamespace() + "/" + binding.RoleRef.Name
			}
		}
		bound[roleKey] = true
		for _, s := range binding.Subjects {
			subject := s.Kind + " " + s.Name
			if s.Kind == rbacv1.ServiceAccountKind {
				subject = serviceAccountSubject(s.Namespace, s.Name, releaseNS)
			}
			if err := grant(subject, roleKey, scope); err != nil {
				return nil, fmt.Errorf("%s: %w", key(o), err)
			}
		}
	}

	runRole := "ClusterRole/" + execution.DefaultRunClusterRole
	bound[runRole] = true
	if err := grant("ServiceAccount "+execution.DefaultServiceAccountName, runRole, "each namespace with runs"); err != nil {
		return nil, fmt.Errorf("the run pods' role: %w", err)
	}
	for roleKey, role := range roles {
		if bound[roleKey] {
			continue
		}
		scope := "where bound"
		if kind, rest, _ := strings.Cut(roleKey, "/"); kind == "Role" {
			ns, _, _ := strings.Cut(rest, "/")
			scope = namespaceScope(ns, releaseNS)
		}
		if err := grant(aggregatedInto(role.Labels), roleKey, scope); err != nil {
			return nil, err
		}
	}

	out := make([]permission, 0, len(merged))
	holders := map[string]bool{}
	for _, p := range merged {
		out = append(out, *p)
		holders[p.subject] = true
	}
	for _, sa := range serviceAccounts {
		if !holders[sa] {
			out = append(out, permission{subject: sa, role: "-", apiGroup: "-", resource: "-", verbs: "none", scope: "-"})
		}
	}
	sortPermissions(out)
	return out, nil
}

// expandRules gives one row per API group and resource (or non-resource URL)
// of rules; resource names narrow the scope.
func expandRules(subject, role, scope string, rules []rbacv1.PolicyRule) []permission {
	var out []permission
	for _, r := range rules {
		verbs := joinVerbs(strings.Join(r.Verbs, ", "))
		for _, url := range r.NonResourceURLs {
			out = append(out, permission{subject: subject, role: role, apiGroup: "-", resource: url, verbs: verbs, scope: scope})
		}
		narrowed := scope
		if len(r.ResourceNames) > 0 {
			names := slices.Sorted(slices.Values(r.ResourceNames))
			narrowed = scope + "; only " + strings.Join(names, ", ")
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				out = append(out, permission{subject: subject, role: role, apiGroup: cmp.Or(g, "core"), resource: res, verbs: verbs, scope: narrowed})
			}
		}
	}
	return out
}

// joinVerbs is the sorted union of comma-separated verb lists.
func joinVerbs(lists ...string) string {
	var verbs []string
	for _, l := range lists {
		for v := range strings.SplitSeq(l, ",") {
			if v = strings.TrimSpace(v); v != "" && !slices.Contains(verbs, v) {
				verbs = append(verbs, v)
			}
		}
	}
	slices.Sort(verbs)
	return strings.Join(verbs, ", ")
}

func serviceAccountSubject(ns, name, releaseNS string) string {
	if ns == releaseNS {
		return "ServiceAccount " + name
	}
	return "ServiceAccount " + ns + "/" + name
}

func namespaceScope(ns, releaseNS string) string {
	if ns == releaseNS {
		return "release namespace"
	}
	return "namespace " + ns
}

// aggregatedInto names who holds a role the chart binds to nobody: the
// built-in roles its aggregation labels add it to, or a cluster admin's
// binding.
func aggregatedInto(labels map[string]string) string {
	var into []string
	for _, builtin := range []string{"view", "edit", "admin"} {
		if labels["rbac.authorization.k8s.io/aggregate-to-"+builtin] == "true" {
			into = append(into, builtin)
		}
	}
	if len(into) == 0 {
		return "bound by a cluster admin"
	}
	return "aggregated into " + strings.Join(into, ", ")
}

// sortPermissions puts the ServiceAccounts first, then the roles for people,
// each by role, API group, resource and scope.
func sortPermissions(ps []permission) {
	slices.SortFunc(ps, func(a, b permission) int {
		isRole := func(p permission) bool { return !strings.HasPrefix(p.subject, "ServiceAccount ") }
		if ra, rb := isRole(a), isRole(b); ra != rb {
			if ra {
				return 1
			}
			return -1
		}
		return cmp.Or(
			cmp.Compare(a.subject, b.subject),
			cmp.Compare(a.role, b.role),
			cmp.Compare(a.apiGroup, b.apiGroup),
			cmp.Compare(a.resource, b.resource),
			cmp.Compare(a.scope, b.scope),
		)
	})
}

// splitPermissionsTable cuts page around the table between the permissions
// markers (the markers stay in head and tail) and parses its rows.
func splitPermissionsTable(page string) (head, tail string, rows []permission, err error) {
	begin := strings.Index(page, permissionsBegin)
	end := strings.Index(page, permissionsEnd)
	if begin < 0 || end < begin {
		return "", "", nil, fmt.Errorf("no %s ... %s block", permissionsBegin, permissionsEnd)
	}
	head, table, tail := page[:begin+len(permissionsBegin)]+"\n", page[begin+len(permissionsBegin):end], page[end:]
	for line := range strings.Lines(table) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 7 {
			return "", "", nil, fmt.Errorf("table row %q has %d cells, want 7 (a why may not hold a |)", line, len(cells))
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		p := permission{cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6]}
		if p == permissionHeader {
			continue
		}
		rows = append(rows, p)
	}
	return head, tail, rows, nil
}

// keepWhys returns granted with the why of each row of documented that it
// still has, found by whyKey, so that a change of verbs keeps the why.
func keepWhys(granted, documented []permission) []permission {
	whys := map[string]string{}
	for _, p := range documented {
		whys[p.whyKey()] = p.why
	}
	out := slices.Clone(granted)
	for i := range out {
		out[i].why = whys[out[i].whyKey()]
	}
	return out
}

func formatPermissions(ps []permission) string {
	var b strings.Builder
	b.WriteString(permissionHeader.row() + "\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, p := range ps {
		b.WriteString(p.row() + "\n")
	}
	return b.String()
}
