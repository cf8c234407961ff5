# examples/mlp_split.fy — examples/mlp.fy with its first layer pinned to a second device. Compile
# it for two (virtual) host devices and let placement move the input there:
#   ferry-compile examples/mlp_split.fy --devices cpu,cpu:1 --placement auto --emit svg -o mlp.svg
# Under --placement strict (the default) the pin is an error that names both devices.
graph mlp {
  input %x : f32[32,784] @cpu
  param %fc1.weight : f32[256,784] = randn(seed=1)
  param %fc1.bias : f32[256] = zeros
  param %fc2.weight : f32[10,256] = randn(seed=2)
  param %fc2.bias : f32[10] = zeros
  %h @cpu:1 = linear(%x, %fc1.weight, %fc1.bias)
  %a = relu(%h)
  %logits = linear(%a, %fc2.weight, %fc2.bias)
  %probs = softmax(%logits, axis=-1)
  output %probs
}
