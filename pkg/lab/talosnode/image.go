package talosnode

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// Image is a Talos a node runs, as the lab reads it from an installer
// image reference (ParseImage) or a cloud knows it of a disk image
// (DiskImage): the Talos version (the tag), the Image Factory schematic
// (the last path element of factory images, when it is a schematic id) and
// the platform ("nocloud" from factory.talos.dev/nocloud-installer/…;
// "metal" for the generic ghcr.io/siderolabs/installer).
type Image struct {
	// Ref is the reference as given (a disk image's: where it came from).
	Ref string
	// Version is the tag ("v1.14.1").
	Version string
	// Schematic is the Image Factory schematic id, empty for images not
	// built by an Image Factory.
	Schematic string
	// Platform is the Talos platform the installer is for.
	Platform string
	// Factory is the registry host of an Image Factory image
	// ("factory.talos.dev"), empty otherwise.
	Factory string
	// SecureBoot reports a -secureboot installer.
	SecureBoot bool
}

// schematicID matches an Image Factory schematic id: hex SHA-256.
func schematicID() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) }

// versionTag matches a Talos release tag.
func versionTag() *regexp.Regexp {
	return regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)
}

// ParseImage parses an installer image reference such as
// factory.talos.dev/nocloud-installer/<schematic>:v1.14.1 or
// ghcr.io/siderolabs/installer:v1.13.8. A reference without a release tag
// (a digest, "latest") is refused: the simulated node could not know which
// Talos it runs.
func ParseImage(ref string) (Image, error) {
	img := Image{Ref: ref, Platform: "metal"}
	name, tag, ok := cutTag(ref)
	if !ok || !versionTag().MatchString(tag) {
		return Image{}, fmt.Errorf("installer image %q has no Talos release tag (vX.Y.Z)", ref)
	}
	img.Version = tag
	parts := strings.Split(name, "/")
	if len(parts) < 2 {
		return img, nil
	}
	if last := parts[len(parts)-1]; schematicID().MatchString(last) && len(parts) >= 3 {
		img.Schematic = last
		img.Factory = parts[0]
		repo := parts[len(parts)-2]
		if s, found := strings.CutSuffix(repo, "-secureboot"); found {
			img.SecureBoot, repo = true, s
		}
		if p, found := strings.CutSuffix(repo, "-installer"); found && p != "" {
			img.Platform = p
		}
	}
	return img, nil
}

// cutTag splits name:tag, where the tag follows the last colon after the
// last slash (a registry port is not a tag).
func cutTag(ref string) (name, tag string, ok bool) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ref, "", false
	}
	name, tag = ref[:i], ref[i+1:]
	if at := strings.Index(tag, "@"); at >= 0 {
		tag = tag[:at]
	}
	return name, tag, true
}

// isInstaller reports whether ref names a Talos installer image: a
// repository "installer" (ghcr.io/siderolabs/installer) or
// "<platform>-installer", SecureBoot's "-secureboot" variants, optionally
// followed by an Image Factory schematic id. That is what
// LifecycleService.Upgrade can run; any other image (kube-apiserver, the
// kubelet) is pulled as a plain image.
func isInstaller(ref string) bool {
	name, _, _ := strings.Cut(ref, "@")
	name, _, _ = cutTag(name)
	parts := strings.Split(name, "/")
	if len(parts) > 1 && schematicID().MatchString(parts[len(parts)-1]) {
		parts = parts[:len(parts)-1]
	}
	repo := strings.TrimSuffix(parts[len(parts)-1], "-secureboot")
	return repo == "installer" || strings.HasSuffix(repo, "-installer")
}

// referenceName matches the name part of an image reference (registry and
// repository path, lower case).
func referenceName() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*$`)
}

// canonicalName is the name containerd's pull reports for ref, as Talos's
// ImageService answers it: the fully qualified repository (Docker Hub's
// short names expanded) and the digest it resolved to; the lab's digest is
// a hash of the reference. It fails for what is not an image reference.
func canonicalName(ref string) (string, error) {
	name, digest, byDigest := strings.Cut(ref, "@")
	name, _, _ = cutTag(name)
	if !referenceName().MatchString(name) {
		return "", fmt.Errorf("failed to pull image %q: invalid reference format", ref)
	}
	parts := strings.Split(name, "/")
	switch {
	case len(parts) == 1:
		name = "docker.io/library/" + name
	case !strings.ContainsAny(parts[0], ".:") && parts[0] != "localhost":
		name = "docker.io/" + name
	}
	if !byDigest {
		sum := sha256.Sum256([]byte(ref))
		digest = "sha256:" + hex.EncodeToString(sum[:])
	}
	return name + "@" + digest, nil
}
