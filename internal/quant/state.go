// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quant

import (
	"fmt"

	"github.com/kquant/kquant/internal/quant/scaling"
)

// State is the delayed-scaling state of one tensor: the scale the next
// quantize uses and the amax history (entry 0 collects the current step's
// amax). It is an explicit value so that the caller owns it, the CUDA
// backend can mirror it in device memory, and grouped quantizes can carry
// one per group.
type State struct {
	Scale       float32
	AmaxHistory []float32
}

// NewState returns the initial state for a delayed-scaling recipe: scale 1,
// a zeroed history of the recipe's length (TE's initial values).
func NewState(r Recipe) *State {
	n := r.Delayed.AmaxHistoryLen
	if n < 1 {
		n = 1
	}
	return &State{Scale: 1, AmaxHistory: make([]float32, n)}
}

// Clone returns a deep copy.
func (s *State) Clone() *State {
	return &State{Scale: s.Scale, AmaxHistory: append([]float32(nil), s.AmaxHistory...)}
}

// Check reports whether the state fits the recipe.
func (s *State) Check(r Recipe) error {
	if s == nil {
		return fmt.Errorf("delayed scaling needs a State")
	}
	if len(s.AmaxHistory) != r.Delayed.AmaxHistoryLen {
		return fmt.Errorf("state has an amax history of %d entries, the recipe wants %d", len(s.AmaxHistory), r.Delayed.AmaxHistoryLen)
	}
	return nil
}

// RecordAmax raises history entry 0 to amax, as the cast kernel's atomic max
// does, so that several quantizes in one step keep the largest.
func (s *State) RecordAmax(amax float32) {
	if amax > s.AmaxHistory[0] {
		s.AmaxHistory[0] = amax
	}
}

// Update ends a step: it computes the next scale from the history and rolls
// it, with the contract's rules (scaling.DelayedUpdate). The role picks
// fp8_max (E5M2 for gradients under HYBRID).
func (s *State) Update(r Recipe, role TensorRole) error {
	p, err := r.Plan(role)
	if err != nil {
		return err
	}
	if p.Scheme != DelayedScaling {
		return fmt.Errorf("state update needs scheme DelayedScaling, not %s", p.Scheme)
	}
	if err := s.Check(r); err != nil {
		return err
	}
	algo := scaling.AmaxMax
	if p.Delayed.AmaxComputeAlgo == AmaxComputeMostRecent {
		algo = scaling.AmaxMostRecent
	}
	s.Scale = scaling.DelayedUpdate(s.Scale, s.AmaxHistory, p.Element.MaxFinite(), p.Delayed.Margin, algo)
	return nil
}
