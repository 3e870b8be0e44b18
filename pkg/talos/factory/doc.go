// Package factory computes the Talos Image Factory schematics talosc needs
// (the boot image's base set and one installer set per distinct pool
// extension set), derives their ids, image names and installer references,
// and talks to the Image Factory HTTP API: create a schematic, list Talos
// versions and download boot artifacts with size and hash checks.
//
// Schematic ids are computed with github.com/siderolabs/image-factory's
// schematic package, so they match the factory's ids byte for byte without
// a network round trip; CreateSchematic refuses a factory that disagrees.
package factory
