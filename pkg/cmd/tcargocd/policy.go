package tcargocd

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The AppProject CRD accepts any policy string: Argo CD checks a project
// role's policies only in its API server (A@v3.5.1:server/project/project.go:73
// calling pkg/apis/application/v1alpha1/types.go:2736-2770), so a bad one
// applied with kubectl or server-side apply is stored and then silently
// grants nothing. validPolicy and validRoleName are those rules, run on
// what the plugin renders before anything is applied (plugins.md §3.3).

// roleName is Argo CD's project role name rule.
var roleName = regexp.MustCompile(`^[a-zA-Z0-9]([-_a-zA-Z0-9]*[a-zA-Z0-9])?$`)

// validRoleName checks a project role's name.
func validRoleName(name string) error {
	if !roleName.MatchString(name) {
		return fmt.Errorf("invalid role name %q: must be letters, digits, '-' and '_', starting and ending with a letter or digit", name)
	}
	return nil
}

// policyResources are the resources a project role policy may name.
func policyResources() []string {
	return []string{"applications", "applicationsets", "repositories", "exec", "logs", "clusters"}
}

// policyActions are the plain actions; "action/…", "update/…" and
// "delete/…" are accepted too.
func policyActions() []string {
	return []string{"get", "create", "update", "delete", "sync", "override", "*"}
}

// validPolicy checks one policy line of role in project as Argo CD's
// ProjectRole validation does: "p, proj:<project>:<role>, <resource>,
// <action>, <object>, <effect>".
func validPolicy(project, role, policy string) error {
	fields := strings.Split(policy, ",")
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	if len(fields) != 6 || fields[0] != "p" {
		return fmt.Errorf("invalid policy %q: must have the form 'p, proj:<project>:<role>, <resource>, <action>, <object>, <effect>'", policy)
	}
	subject, resource, action, object, effect := fields[1], fields[2], fields[3], fields[4], fields[5]
	var errs []error
	if want := "proj:" + project + ":" + role; subject != want {
		errs = append(errs, fmt.Errorf("subject %q must be %q", subject, want))
	}
	if !slices.Contains(policyResources(), resource) {
		errs = append(errs, fmt.Errorf("resource %q must be one of %s", resource, strings.Join(policyResources(), ", ")))
	}
	if !validAction(action) {
		errs = append(errs, fmt.Errorf("action %q must be one of %s or action/…, update/…, delete/…", action, strings.Join(policyActions(), ", ")))
	}
	objectRule := regexp.MustCompile(`^` + regexp.QuoteMeta(project) + `(/[*\w-.]+)?/[*\w-.]+$`)
	if !objectRule.MatchString(object) {
		errs = append(errs, fmt.Errorf("object %q must be %s/<name> or %s/<namespace>/<name>", object, project, project))
	}
	if effect != "allow" && effect != "deny" {
		errs = append(errs, fmt.Errorf("effect %q must be allow or deny", effect))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid policy %q: %w", policy, err)
	}
	return nil
}

func validAction(a string) bool {
	if slices.Contains(policyActions(), a) {
		return true
	}
	for _, prefix := range []string{"action/", "update/", "delete/"} {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

// validGroup checks a project role group: one holding a comma must be
// quoted, or Argo CD's CSV policy reads it as two fields.
func validGroup(g string) error {
	quoted := len(g) > 1 && strings.HasPrefix(g, `"`) && strings.HasSuffix(g, `"`)
	if strings.Contains(g, ",") && !quoted {
		return fmt.Errorf("invalid group %q: a group holding ',' must be quoted", g)
	}
	return nil
}
