;; Int8 dot products for the embedded store's quantised scans (int8-kernel.ts embeds the binary;
;; regenerate it with `node scripts/build-wasm.mjs` after editing this file).
;; dots(q, codes, dims, rows, n, out): out[i] = Σ_j q[j] · codes[rows[i]·dims + j] for i < n, as i32.
;; widen(src, dst, dims): int8 codes at src as int16 lanes at dst (a row as the query, for graph builds).
;;   q     int16 lanes (the query code), dims × 2 bytes;
;;   codes int8 rows, row-major; rows: n × i32 row numbers; out: n × i32. dims: a multiple of 16.
;; The caller keeps |q| small enough for the sum, at most dims · |q| · 128, to fit an i32 (queryCodeMax).
(module
  (import "env" "memory" (memory 1))
  (func (export "dots") (param $q i32) (param $codes i32) (param $dims i32) (param $rows i32) (param $n i32) (param $out i32)
    (local $i i32) (local $row i32) (local $j i32) (local $qp i32) (local $acc v128) (local $v v128)
    (block $done
      (loop $eachRow
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $row
          (i32.add (local.get $codes)
            (i32.mul (i32.load (i32.add (local.get $rows) (i32.shl (local.get $i) (i32.const 2)))) (local.get $dims))))
        (local.set $acc (v128.const i32x4 0 0 0 0))
        (local.set $j (i32.const 0))
        (local.set $qp (local.get $q))
        (loop $each16
          (local.set $v (v128.load (i32.add (local.get $row) (local.get $j))))
          (local.set $acc
            (i32x4.add
              (i32x4.add (local.get $acc)
                (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $v)) (v128.load (local.get $qp))))
              (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $v)) (v128.load offset=16 (local.get $qp)))))
          (local.set $qp (i32.add (local.get $qp) (i32.const 32)))
          (br_if $each16 (i32.lt_u (local.tee $j (i32.add (local.get $j) (i32.const 16))) (local.get $dims))))
        (i32.store
          (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2)))
          (i32.add
            (i32.add (i32x4.extract_lane 0 (local.get $acc)) (i32x4.extract_lane 1 (local.get $acc)))
            (i32.add (i32x4.extract_lane 2 (local.get $acc)) (i32x4.extract_lane 3 (local.get $acc)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $eachRow))))
  ;; widen(src, dst, dims): dst[j] = src[j] for j < dims, int8 → int16 (a row of codes as the query).
  (func (export "widen") (param $src i32) (param $dst i32) (param $dims i32)
    (local $j i32) (local $v v128)
    (block $done
      (loop $each16
        (br_if $done (i32.ge_u (local.get $j) (local.get $dims)))
        (local.set $v (v128.load (i32.add (local.get $src) (local.get $j))))
        (v128.store (i32.add (local.get $dst) (i32.shl (local.get $j) (i32.const 1))) (i16x8.extend_low_i8x16_s (local.get $v)))
        (v128.store offset=16 (i32.add (local.get $dst) (i32.shl (local.get $j) (i32.const 1))) (i16x8.extend_high_i8x16_s (local.get $v)))
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br $each16)))))
