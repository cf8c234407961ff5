# examples/mistakes/encoder.fy — a text encoder meant for cuda:0 with four independent mistakes
# eager frameworks report one at a time, at run time: token ids read as floats, a positional table
# and a mask created on the cpu, a half-precision weight in an f32 layer. (Not a model of examples/:
# those all compile.) One run of ferry-compile examples/mistakes/encoder.fy --devices cpu,cuda:0
# reports all four, each with the fix that respects what the model says (README.md).
graph encoder {
  input %ids : f32[16] @cuda:0
  param %embed : f32[1000,64] @cuda:0 = randn(seed=1)
  param %pos : f32[16,64] @cpu = randn(seed=2)
  param %w : f16[64,64] @cuda:0 = randn(seed=3)
  param %b : f32[64] @cuda:0 = zeros
  %mask @cpu = constant(value=f32[]{0.5})
  %e = gather(%embed, %ids)
  %p = add(%e, %pos)
  %h = linear(%p, %w, %b)
  %a = gelu(%h)
  %y = mul(%a, %mask)
  output %y
}
