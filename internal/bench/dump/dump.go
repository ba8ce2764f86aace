// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package dump

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kquant/kquant/internal/bench"
	"github.com/kquant/kquant/internal/bench/npy"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/accuracy"
)

// Writer writes each observed shape under Dir. It is used by one run at a
// time: it remembers the directory names it gave out so that a repeated
// shape does not overwrite the first.
type Writer struct {
	Dir  string
	used map[string]bool
}

var _ bench.Observer = (*Writer)(nil)

// New returns a writer into dir, creating it.
func New(dir string) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("dump: %w", err)
	}
	return &Writer{Dir: dir, used: map[string]bool{}}, nil
}

// ObserveShape implements bench.Observer.
func (w *Writer) ObserveShape(ctx context.Context, a *bench.ShapeArtifacts) error {
	name := fmt.Sprintf("%dx%d", a.Shape.Rows, a.Shape.Cols)
	if w.used[name] {
		name = fmt.Sprintf("%s-%d", name, a.Index)
	}
	w.used[name] = true
	dir := filepath.Join(w.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	meta := shapeMeta{
		Recipe: a.Spec.RecipeName, RecipeKey: a.Spec.RecipeKey,
		Scheme: string(a.Recipe.Scheme), Format: string(a.Recipe.Format),
		Operation: string(a.Operation), Rows: a.Shape.Rows, Cols: a.Shape.Cols,
		OutFeatures: a.Shape.OutFeatures,
		InputDType:  string(a.Spec.Workload.InputDType), Distribution: string(a.Spec.Workload.Distribution),
		Usage: string(a.Spec.Workload.Usage), Seed: a.Spec.Workload.Seed, Splits: a.Splits,
	}
	if len(a.Tensors) == 1 && a.Tensors[0].Name == "" {
		// Quantize: one tensor, written in the shape's directory.
		return w.writeTensor(ctx, dir, a, &a.Tensors[0], nil)
	}
	for k := range a.Tensors {
		t := &a.Tensors[k]
		if err := w.writeTensor(ctx, filepath.Join(dir, t.Name), a, t, &meta); err != nil {
			return err
		}
		meta.Tensors = append(meta.Tensors, t.Name)
	}
	if a.Y != nil {
		if err := writeFloat32(dir, "y.npy", *a.Y, &meta.Files); err != nil {
			return err
		}
	}
	if a.Exact != nil {
		if err := writeFloat32(dir, "y_exact.npy", *a.Exact, &meta.Files); err != nil {
			return err
		}
	}
	return writeJSON(filepath.Join(dir, "meta.json"), meta)
}

// shapeMeta is meta.json at the level of a grouped or linear shape.
type shapeMeta struct {
	Recipe       string   `json:"recipe,omitempty"`
	RecipeKey    string   `json:"recipeKey"`
	Scheme       string   `json:"scheme"`
	Format       string   `json:"format"`
	Operation    string   `json:"operation"`
	Rows         int64    `json:"rows"`
	Cols         int64    `json:"cols"`
	OutFeatures  *int64   `json:"outFeatures,omitempty"`
	InputDType   string   `json:"inputDType,omitempty"`
	Distribution string   `json:"distribution,omitempty"`
	Usage        string   `json:"usage,omitempty"`
	Seed         int64    `json:"seed"`
	Splits       []int    `json:"splits,omitempty"`
	Tensors      []string `json:"tensors,omitempty"`
	Files        []file   `json:"files,omitempty"`
}

// tensorMeta is meta.json of one quantized tensor.
type tensorMeta struct {
	shapeMeta
	Name          string  `json:"name,omitempty"`
	TensorRole    string  `json:"tensorRole"`
	ScaleRounding string  `json:"scaleRounding,omitempty"`
	Element       string  `json:"element"`
	ScaleKind     string  `json:"scaleKind"`
	BlockRows     int     `json:"blockRows"`
	BlockCols     int     `json:"blockCols"`
	RowOffset     int     `json:"rowOffset,omitempty"`
	TensorRows    int     `json:"tensorRows"`
	TensorCols    int     `json:"tensorCols"`
	AmaxText      jsonNum `json:"amax"`
	// TensorScale is the per-tensor FP8 encode scale or NVFP4's S.
	TensorScale          *jsonNum `json:"tensorScale,omitempty"`
	ColumnwiseTransposed bool     `json:"columnwiseTransposed,omitempty"`
	RHT                  bool     `json:"randomHadamardTransform,omitempty"`
	RHTSignMask          *uint16  `json:"rhtSignMask,omitempty"`
	StochasticRounding   bool     `json:"stochasticRounding,omitempty"`
	// TensorScaleBound is the E4M3 bound of NVFP4's tensor scale
	// S = bound * 6 / amax: 448, or 256 for 4over6 tensors.
	TensorScaleBound float32 `json:"tensorScaleBound,omitempty"`
	// FourOverSix is the error measure (MAE, MSE) by which each block
	// chose its map-to-6 or map-to-4 scale; absent without 4over6.
	FourOverSix string `json:"fourOverSix,omitempty"`
	// RowScaled says the rowwise operand has one tensor scale per row,
	// in row_amax.npy and row_scale.npy (tensorScale is then absent).
	RowScaled bool `json:"rowScaled,omitempty"`
}

// file describes one .npy file of a directory.
type file struct {
	Name  string `json:"name"`
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
	// Content says what the file holds, for a reader without this package.
	Content string `json:"content"`
}

// jsonNum is a float32 in JSON: shortest round-trip decimal, or the strings
// "NaN", "Infinity", "-Infinity" (as Python's json module reads them), since
// JSON numbers cannot hold those.
type jsonNum float32

func (f jsonNum) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Infinity"`), nil
	}
	return []byte(strconv.FormatFloat(v, 'g', -1, 32)), nil
}

func (w *Writer) writeTensor(ctx context.Context, dir string, a *bench.ShapeArtifacts, t *bench.TensorArtifacts, parent *shapeMeta) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	res := t.Result
	p := res.Plan
	m := tensorMeta{
		Name: t.Name, TensorRole: string(res.Role), Element: p.Element.String(), ScaleKind: p.Scales.String(),
		BlockRows: p.BlockRows, BlockCols: p.BlockCols, RowOffset: t.RowOffset,
		TensorRows: res.Rows, TensorCols: res.Cols, AmaxText: jsonNum(res.Amax),
		ColumnwiseTransposed: p.ColumnwiseTransposed, RHT: p.RHT, StochasticRounding: p.Stochastic,
	}
	if parent != nil {
		m.shapeMeta = *parent
		m.Files, m.Tensors = nil, nil
	} else {
		m.shapeMeta = shapeMeta{
			Recipe: a.Spec.RecipeName, RecipeKey: a.Spec.RecipeKey,
			Scheme: string(a.Recipe.Scheme), Format: string(a.Recipe.Format),
			Operation: string(a.Operation), Rows: a.Shape.Rows, Cols: a.Shape.Cols,
			InputDType: string(a.Spec.Workload.InputDType), Distribution: string(a.Spec.Workload.Distribution),
			Usage: string(a.Spec.Workload.Usage), Seed: a.Spec.Workload.Seed,
		}
	}
	if p.Scheme == quant.MXFP8BlockScaling {
		m.ScaleRounding = string(a.Recipe.MXFP8.ScaleRounding)
	}
	if p.RHT {
		mask := p.RHTSignMask
		m.RHTSignMask = &mask
	}
	if p.Scheme == quant.NVFP4BlockScaling {
		m.TensorScaleBound, m.FourOverSix, m.RowScaled = p.TensorScaleBound, string(p.FourOverSix), p.RowScaled
	}
	if o, _ := accuracy.Measured(res); o != nil && o.RowScale == nil && (p.PerTensor() || p.Scales == quant.ScaleE4M3) {
		s := jsonNum(o.Scale)
		m.TensorScale = &s
	}
	files := &m.Files
	if err := writeFloat32(dir, "input.npy", t.Input, files); err != nil {
		return err
	}
	if err := writeOperand(dir, "", res.Rowwise, files); err != nil {
		return err
	}
	if err := writeOperand(dir, "columnwise_", res.Columnwise, files); err != nil {
		return err
	}
	if err := writeFloat32(dir, "dequantized.npy", t.Dequantized, files); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, "meta.json"), m)
}

func writeOperand(dir, prefix string, o *quant.Operand, files *[]file) error {
	if o == nil {
		return nil
	}
	layout := "rowwise"
	if o.Transposed {
		layout = "transposed"
	}
	if err := writeUint8(dir, prefix+"data.npy", []int{o.Rows, o.RowStride()}, o.Data,
		fmt.Sprintf("%s codes, %s [%d, %d]%s", o.Element, layout, o.Rows, o.Cols, packedNote(o)), files); err != nil {
		return err
	}
	shape := []int{o.ScaleRows, o.ScaleCols}
	switch o.Scales {
	case quant.ScaleFloat32:
		if err := writeNPY(dir, prefix+"scale_inv.npy", npy.DescrFloat32, shape, "float32 decode scales (scale_inv), unswizzled, padded", files,
			func(f *os.File) error { return npy.WriteFloat32(f, shape, o.ScaleInv) }); err != nil {
			return err
		}
	default:
		if err := writeUint8(dir, prefix+"scale_inv.npy", shape, o.ScaleCodes, o.Scales.String()+" scale codes, unswizzled, padded", files); err != nil {
			return err
		}
	}
	if o.RowAmax != nil {
		if err := writeVector(dir, prefix+"row_amax.npy", o.RowAmax, "float32 amax of each row (row-scaled NVFP4: what TE stores as the amax vector)", files); err != nil {
			return err
		}
		if err := writeVector(dir, prefix+"row_scale.npy", o.RowScale, "float32 tensor encode scale S of each row, from its amax", files); err != nil {
			return err
		}
	}
	if o.Swizzled != nil {
		if err := writeUint8(dir, prefix+"scale_inv_swizzled.npy", []int{len(o.Swizzled)}, o.Swizzled, o.Scales.String()+" scale codes in the GEMM swizzled layout", files); err != nil {
			return err
		}
	}
	return nil
}

func packedNote(o *quant.Operand) string {
	if o.RowStride() != o.Cols {
		return ", packed two per byte, lower column in the low nibble"
	}
	return ""
}

func writeFloat32(dir, name string, t quant.Tensor, files *[]file) error {
	shape := []int{t.Rows, t.Cols}
	content := map[string]string{
		"input.npy":       "float32 input, exactly as quantized",
		"dequantized.npy": "float32 rowwise operand decoded",
		"y.npy":           "float32 output from the dequantized operands",
		"y_exact.npy":     "float32 output from the unquantized operands",
	}[name]
	return writeNPY(dir, name, npy.DescrFloat32, shape, content, files,
		func(f *os.File) error { return npy.WriteFloat32(f, shape, t.Data) })
}

func writeVector(dir, name string, v []float32, content string, files *[]file) error {
	shape := []int{len(v)}
	return writeNPY(dir, name, npy.DescrFloat32, shape, content, files,
		func(f *os.File) error { return npy.WriteFloat32(f, shape, v) })
}

func writeUint8(dir, name string, shape []int, data []byte, content string, files *[]file) error {
	return writeNPY(dir, name, npy.DescrUint8, shape, content, files,
		func(f *os.File) error { return npy.WriteUint8(f, shape, data) })
}

func writeNPY(dir, name, descr string, shape []int, content string, files *[]file, write func(*os.File) error) error {
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("dump %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("dump %s: %w", path, err)
	}
	dtype := "float32"
	if descr == npy.DescrUint8 {
		dtype = "uint8"
	}
	*files = append(*files, file{Name: name, DType: dtype, Shape: shape, Content: content})
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("dump %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	return nil
}
