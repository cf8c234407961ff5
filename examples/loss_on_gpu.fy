# examples/loss_on_gpu.fy — the loss of a batch whose predictions and targets arrive on the GPU:
# a reduction over the batch, then a few operations on one number. Unconstrained, auto placement
# copies the sum to the cpu and finishes there (a copy of 4 bytes costs less than a handful of
# kernel launches); with a budget that forbids device-to-host copies it keeps the whole loss on
# the GPU, the plan without such a copy:
#   ferry-compile examples/loss_on_gpu.fy --devices cpu,cuda:0 --placement auto --transfers d2h=error
graph loss_on_gpu {
  input %pred : f32[64,1000] @cuda:0
  input %target : f32[64,1000] @cuda:0
  %diff = sub(%pred, %target)
  %sq = mul(%diff, %diff)
  %mse = mean(%sq)
  %rmse = sqrt(%mse)
  %scale = constant(value=f32[]{0.5})
  %half = mul(%rmse, %scale)
  %loss = log(%half)
  output %loss
}
