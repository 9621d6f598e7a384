// Preprocessing of decoded frames into model input, on the GPU.
//
// The same formulas as the CPU reference in `preprocess.rs` (`display_interval`, the rotation
// mapping of `footprints`, `axis_taps`, `yuv_to_rgb`, `element_value`), in f32, so both paths
// agree to rounding. Keep the two in step: a change there is a change here.
//
// One invocation writes one u32 word of the output: 1 f32, 2 f16 or 4 u8 elements, lowest
// bytes first (little-endian). Each element of the word is mapped on its own to
// (frame, channel, y, x) by the layout, so a word may straddle two frames when a frame's
// output is not a whole number of words.
//
// The host dispatches the batch in chunks of whole frames, each starting on a word boundary
// of the output; every index below (words, elements, frames, input bytes) is relative to the
// current chunk.

struct Globals {
    out_width: u32,
    out_height: u32,
    // 0: CHW within a frame ([B, T, C, H, W]); 1: HWC ([B, T, H, W, C]).
    out_layout: u32,
    // 0: f32; 1: f16; 2: u8.
    dtype: u32,
    // 0: bilinear; 1: area.
    out_filter: u32,
    // 3 * out_width * out_height.
    frame_elements: u32,
    // Index in `output` (as bound) of this chunk's first word.
    word_base: u32,
    // Words this chunk writes.
    word_count: u32,
    // Elements of this chunk's frames; elements past it (the tail of the batch's last word)
    // are written as zero bytes.
    element_count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    mean: vec4<f32>,
    stddev: vec4<f32>,
}

// One frame of the chunk. Twenty 4-byte fields: an 80-byte array stride.
struct FrameInfo {
    // Byte offset of the frame's data in `input` (a multiple of 4).
    offset: u32,
    // Coded size.
    width: u32,
    height: u32,
    // 0: YUV 4:2:0 planes; 1: packed RGB; 2: padding (zero bytes).
    kind: u32,
    quarter_turns: u32,
    flip: u32,
    // Crop rectangle in display pixels.
    crop_x: f32,
    crop_y: f32,
    crop_w: f32,
    crop_h: f32,
    // Range: l = (y - y_offset) / y_div, cb = (u - 128) / c_div, cr = (v - 128) / c_div.
    y_offset: f32,
    y_div: f32,
    c_div: f32,
    // Matrix, as computed by the host from (Kr, Kb) with the reference's expressions:
    // r = l + r_cr cr; g = l - g_cb cb - g_cr cr; b = l + b_cb cb.
    r_cr: f32,
    g_cb: f32,
    g_cr: f32,
    b_cb: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

const KIND_YUV420: u32 = 0u;
const KIND_RGB: u32 = 1u;
const KIND_PADDING: u32 = 2u;

const LAYOUT_CHW: u32 = 0u;

const DTYPE_F32: u32 = 0u;
const DTYPE_F16: u32 = 1u;

const FILTER_AREA: u32 = 1u;

const WORKGROUP_SIZE: u32 = 64u;

@group(0) @binding(0) var<uniform> globals: Globals;
@group(0) @binding(1) var<storage, read> frames: array<FrameInfo>;
// All frames' bytes, each frame starting at a 4-byte boundary.
@group(0) @binding(2) var<storage, read> input: array<u32>;
@group(0) @binding(3) var<storage, read_write> output: array<u32>;

// Byte `i` of `input`, as 0..=255.
fn byte_at(i: u32) -> f32 {
    let word = input[i >> 2u];
    return f32((word >> ((i & 3u) * 8u)) & 0xffu);
}

// One plane: sample (x, y) is byte `base + y * stride + x * step`.
struct Plane {
    base: u32,
    stride: u32,
    step: u32,
    width: u32,
    height: u32,
}

fn texel(p: Plane, x: u32, y: u32) -> f32 {
    return byte_at(p.base + y * p.stride + x * p.step);
}

// The taps of `axis_taps` for one interval, as a rule rather than a list: tap k has
// index `tap_index(t, k)` and weight `tap_weight(t, k)`, k in 0..count.
struct Taps {
    first: u32,
    count: u32,
    // Area rule: weights from the overlap of [lo, hi) with each sample, over `width`.
    area: bool,
    lo: f32,
    hi: f32,
    width: f32,
    // Bilinear: taps `first` and `second`, weights 1 - frac and frac.
    second: u32,
    frac: f32,
}

// `axis_taps` of the reference: interval [a, b) on an axis of n samples.
fn axis_taps(a: f32, b: f32, n: u32, mode: u32) -> Taps {
    let nf = f32(n);
    var t: Taps;
    if mode == FILTER_AREA && b - a > 1.0 {
        let lo = clamp(a, 0.0, nf);
        let hi = clamp(b, 0.0, nf);
        if hi - lo > 0.0 {
            t.first = u32(floor(lo));
            t.count = min(u32(ceil(hi)), n) - t.first;
            t.area = true;
            t.lo = lo;
            t.hi = hi;
            t.width = hi - lo;
            return t;
        }
    }
    let c = 0.5 * (a + b) - 0.5;
    let p = clamp(c, 0.0, nf - 1.0);
    let i0 = floor(p);
    t.first = u32(i0);
    t.count = 2u;
    t.area = false;
    t.second = min(t.first + 1u, n - 1u);
    t.frac = p - i0;
    return t;
}

fn tap_index(t: Taps, k: u32) -> u32 {
    if t.area || k == 0u {
        return t.first + k;
    }
    return t.second;
}

fn tap_weight(t: Taps, k: u32) -> f32 {
    if t.area {
        let i = f32(t.first + k);
        return (min(t.hi, i + 1.0) - max(t.lo, i)) / t.width;
    }
    if k == 0u {
        return 1.0 - t.frac;
    }
    return t.frac;
}

// An output pixel's footprint in coded luma coordinates (`footprints` of the reference):
// `along_x` is the interval driven by output x, `along_y` by output y; output x drives the
// coded x axis when `x_is_x`, else the coded y axis.
struct Footprint {
    along_x: vec2<f32>,
    along_y: vec2<f32>,
    x_is_x: bool,
}

// `display_interval` of the reference.
fn display_interval(o: u32, out_size: u32, crop_start: f32, crop_len: f32, flip: bool) -> vec2<f32> {
    let n = f32(out_size);
    var u0 = f32(o) / n;
    var u1 = f32(o + 1u) / n;
    if flip {
        let t = u0;
        u0 = 1.0 - u1;
        u1 = 1.0 - t;
    }
    return vec2<f32>(crop_start + u0 * crop_len, crop_start + u1 * crop_len);
}

// [a, b) -> [size - b, size - a).
fn mirror(v: vec2<f32>, size: f32) -> vec2<f32> {
    return vec2<f32>(size - v.y, size - v.x);
}

fn footprint(f: FrameInfo, ox: u32, oy: u32) -> Footprint {
    let xs = display_interval(ox, globals.out_width, f.crop_x, f.crop_w, f.flip != 0u);
    let ys = display_interval(oy, globals.out_height, f.crop_y, f.crop_h, false);
    let w = f32(f.width);
    let h = f32(f.height);
    // Display (dx, dy) -> coded (x, y):
    // q=0: (dx, dy); q=1: (dy, H - dx); q=2: (W - dx, H - dy); q=3: (W - dy, dx).
    switch f.quarter_turns % 4u {
        case 0u: {
            return Footprint(xs, ys, true);
        }
        case 1u: {
            return Footprint(mirror(xs, h), ys, false);
        }
        case 2u: {
            return Footprint(mirror(xs, w), mirror(ys, h), true);
        }
        default: {
            return Footprint(xs, mirror(ys, w), false);
        }
    }
}

// `resample_plane` of the reference for one output pixel: the plane's value over the
// footprint, in 0..=255 units. `scale` maps coded luma coordinates to the plane's.
fn sample(p: Plane, fp: Footprint, scale: f32) -> f32 {
    var n_for_x = p.width;
    var n_for_y = p.height;
    if !fp.x_is_x {
        n_for_x = p.height;
        n_for_y = p.width;
    }
    let ax = fp.along_x * scale;
    let ay = fp.along_y * scale;
    let tx = axis_taps(ax.x, ax.y, n_for_x, globals.out_filter);
    let ty = axis_taps(ay.x, ay.y, n_for_y, globals.out_filter);
    // Summed in the reference's order: for each tap along the coded x axis, the taps along
    // the coded y axis first.
    var cols = tx;
    var rows = ty;
    if !fp.x_is_x {
        cols = ty;
        rows = tx;
    }
    var acc = 0.0;
    for (var i = 0u; i < cols.count; i++) {
        let wx = tap_weight(cols, i);
        let ix = tap_index(cols, i);
        var col = 0.0;
        for (var j = 0u; j < rows.count; j++) {
            col += tap_weight(rows, j) * texel(p, ix, tap_index(rows, j));
        }
        acc += wx * col;
    }
    return acc;
}

// Channel `c` of an output pixel, as RGB in [0, 1] (`frame_rgb` of the reference).
fn channel_value(f: FrameInfo, c: u32, ox: u32, oy: u32) -> f32 {
    let fp = footprint(f, ox, oy);
    let w = f.width;
    let h = f.height;
    if f.kind == KIND_RGB {
        let plane = Plane(f.offset + c, 3u * w, 3u, w, h);
        return clamp(sample(plane, fp, 1.0) / 255.0, 0.0, 1.0);
    }
    // YUV 4:2:0: Y, then U, then V, tightly packed.
    let cw = (w + 1u) / 2u;
    let ch = (h + 1u) / 2u;
    let y_plane = Plane(f.offset, w, 1u, w, h);
    let u_plane = Plane(f.offset + w * h, cw, 1u, cw, ch);
    let v_plane = Plane(f.offset + w * h + cw * ch, cw, 1u, cw, ch);
    let l = (sample(y_plane, fp, 1.0) - f.y_offset) / f.y_div;
    // `yuv_to_rgb`: R needs only V, B only U, G both; each channel is clamped on its own,
    // so skipping the unused plane changes nothing.
    var cb = 0.0;
    var cr = 0.0;
    if c != 0u {
        cb = (sample(u_plane, fp, 0.5) - 128.0) / f.c_div;
    }
    if c != 2u {
        cr = (sample(v_plane, fp, 0.5) - 128.0) / f.c_div;
    }
    var v: f32;
    switch c {
        case 0u: {
            v = l + f.r_cr * cr;
        }
        case 1u: {
            v = l - f.g_cb * cb - f.g_cr * cr;
        }
        default: {
            v = l + f.b_cb * cb;
        }
    }
    return clamp(v, 0.0, 1.0);
}

// Rust's `f32::round` (half away from zero); WGSL's `round` is half to even.
fn round_half_away(x: f32) -> f32 {
    let t = trunc(x);
    if abs(x - t) == 0.5 {
        return t + sign(x);
    }
    return round(x);
}

// Element `e` of the chunk (`element_value` of the reference), before encoding. Padding
// frames and elements past the chunk give 0.0, whose encoding is zero bytes in every dtype.
fn element(e: u32) -> f32 {
    if e >= globals.element_count {
        return 0.0;
    }
    let fe = globals.frame_elements;
    let k = e / fe;
    let r = e - k * fe;
    let f = frames[k];
    if f.kind == KIND_PADDING {
        return 0.0;
    }
    let pixels = globals.out_width * globals.out_height;
    var c: u32;
    var i: u32;
    if globals.out_layout == LAYOUT_CHW {
        c = r / pixels;
        i = r - c * pixels;
    } else {
        i = r / 3u;
        c = r - i * 3u;
    }
    let oy = i / globals.out_width;
    let ox = i - oy * globals.out_width;
    let v = channel_value(f, c, ox, oy);
    if globals.dtype == DTYPE_F32 || globals.dtype == DTYPE_F16 {
        return (v - globals.mean[c]) / globals.stddev[c];
    }
    return round_half_away(v * 255.0);
}

// IEEE half bits of `v` in the low 16 bits. `pack2x16float` is undefined outside f16's
// finite range, so overflow is mapped to infinity here, as `half::f16::from_f32` does
// (65520 is the smallest magnitude that rounds to infinity).
fn f16_bits(v: f32) -> u32 {
    if abs(v) >= 65520.0 {
        return select(0x7c00u, 0xfc00u, v < 0.0);
    }
    return pack2x16float(vec2<f32>(v, 0.0)) & 0xffffu;
}

@compute @workgroup_size(64)
fn main(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    // Dispatches over 65535 workgroups are 2-D; rows of `groups.x` workgroups.
    let word = (group.y * groups.x + group.x) * WORKGROUP_SIZE + local;
    if word >= globals.word_count {
        return;
    }
    var bits: u32;
    switch globals.dtype {
        case DTYPE_F32: {
            bits = bitcast<u32>(element(word));
        }
        case DTYPE_F16: {
            let e = word * 2u;
            bits = f16_bits(element(e)) | (f16_bits(element(e + 1u)) << 16u);
        }
        default: {
            let e = word * 4u;
            bits = 0u;
            for (var k = 0u; k < 4u; k++) {
                bits |= u32(element(e + k)) << (8u * k);
            }
        }
    }
    output[globals.word_base + word] = bits;
}
