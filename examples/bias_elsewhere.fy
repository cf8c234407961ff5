# examples/bias_elsewhere.fy — a layer that runs on cpu:1, where its input arrives, with its bias
# left on cpu. A bias is a weight: its copy to cpu:1 is made once, when a session is created, and
# never in a run (the summary and the manifest count it apart, "at load"). Compile it for two
# (virtual) host devices:
#   ferry-compile examples/bias_elsewhere.fy --devices cpu,cpu:1 --placement auto
# Under --placement strict (the default) the bias is an error that names both devices.
graph bias_elsewhere {
  input %x : f32[32,784] @cpu:1
  param %fc1.weight : f32[256,784] = randn(seed=1)
  param %fc1.bias : f32[256] @cpu = zeros
  %h = linear(%x, %fc1.weight, %fc1.bias)
  %y = relu(%h)
  output %y
}
