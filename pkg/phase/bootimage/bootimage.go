// Package bootimage is the image phase: the shared boot image every new
// machine of a cluster boots from, one per Talos version and base
// schematic, kept in the provider (a Glance image on OpenStack) and shared
// by every cluster of the project. It is never deleted: destroy keeps it.
package bootimage

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// Phase is the image phase.
type Phase struct{}

var _ phase.Phase = Phase{}

// Name is the section the phase owns.
func (Phase) Name() string { return phase.Image }

// Converge ensures the boot image exists. The image phase is the first
// to mutate, so it refuses, before connecting, a pipe not headed by a
// fresh validation (sections.Validation), and records the fact for the
// phases after it.
func (Phase) Converge(ctx context.Context, in *phase.Input, sec *state.Section) error {
	fact, err := sections.Validation(in, nil, time.Now())
	if err != nil {
		return err
	}
	cloud, err := in.Env.Cloud(ctx, in)
	if err != nil {
		return err
	}
	spec, out, err := imageSpec(ctx, in)
	if err != nil {
		return err
	}
	out.Validated = fact
	plan := in.NewPlan()
	img, err := cloud.EnsureImage(ctx, spec, plan)
	sec.Plan = plan.Changes()
	out.Image = img
	if err := sec.SetOutputs(out); err != nil {
		return err
	}
	if err != nil {
		return err
	}
	if img.ID == "" {
		sec.Unknown = []string{"image.id"}
	}
	return nil
}

// Destroy keeps the shared image: other clusters may boot from it.
func (Phase) Destroy(_ context.Context, _ *phase.Input, sec *state.Section) error {
	sec.Messages = append(sec.Messages, "the shared boot image is kept: other clusters of the project may boot from it")
	return nil
}

// Status reports the image.
func (Phase) Status(ctx context.Context, in *phase.Input, sec *state.Section) error {
	cloud, err := in.Env.Cloud(ctx, in)
	if err != nil {
		return err
	}
	spec, out, err := imageSpec(ctx, in)
	if err != nil {
		return err
	}
	img, ok, err := cloud.FindImage(ctx, spec)
	if err != nil {
		return err
	}
	if !ok {
		sec.Messages = append(sec.Messages, fmt.Sprintf("boot image %s is missing (converge uploads it)", spec.Name))
	}
	out.Image = img
	return sec.SetOutputs(out)
}

// Check has nothing to report: the versions are the nodes phase's.
func (Phase) Check(context.Context, *phase.Input) (phase.Report, error) {
	return phase.Report{OK: true}, nil
}

// imageSpec derives the image from the Talos version and the base
// schematic, which it registers with the Image Factory (idempotent, also
// in a dry run: the factory serves images only for known schematics).
func imageSpec(ctx context.Context, in *phase.Input) (provider.ImageSpec, sections.Image, error) {
	cfg := in.Config
	platform, err := factory.PlatformFor(cfg.Provider())
	if err != nil {
		return provider.ImageSpec{}, sections.Image{}, err
	}
	artifact, err := factory.BootArtifact(platform, false)
	if err != nil {
		return provider.ImageSpec{}, sections.Image{}, err
	}
	fc, err := factory.ForCluster(in.Config, progress(in))
	if err != nil {
		return provider.ImageSpec{}, sections.Image{}, err
	}
	id, err := fc.CreateSchematic(ctx, factory.BaseSchematic())
	if err != nil {
		return provider.ImageSpec{}, sections.Image{}, fmt.Errorf("register the base schematic with the image factory: %w", err)
	}
	url, err := fc.ImageURL(id, cfg.Talos.Version, artifact)
	if err != nil {
		return provider.ImageSpec{}, sections.Image{}, err
	}
	spec := provider.ImageSpec{
		Name:         factory.BootImageName(cfg.Talos.Version, id),
		TalosVersion: cfg.Talos.Version,
		SchematicID:  id,
		Artifact:     artifact,
		URL:          url,
		Fetch: func(ctx context.Context, dst io.Writer) (int64, error) {
			n, _, err := fc.Download(ctx, id, cfg.Talos.Version, artifact, dst, -1, "")
			return n, err
		},
	}
	return spec, sections.Image{Provider: cfg.Provider(), TalosVersion: cfg.Talos.Version, SchematicID: id, Artifact: artifact}, nil
}

// progress reports a download of a MiB or more every 10 %.
func progress(in *phase.Input) func(done, total int64) {
	last := int64(-1)
	return func(done, total int64) {
		if total < 1<<20 {
			return // small (or unknown) sizes finish before a report helps
		}
		if pct := done * 100 / total / 10; pct != last {
			last = pct
			in.Out.Info("boot image download: %d%% of %d MiB", pct*10, total>>20)
		}
	}
}
