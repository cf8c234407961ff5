// ir/shape_rules.cpp — SKELETON being written by a helper.
#include "ir/op_rules.h"

#include <vector>

namespace ferry {

DType resultDType(const InferArgs &a) {
  std::vector<DType> data;
  for (size_t i = 0; i < a.operands.size(); ++i)
    if (a.op.operand(i).role == OperandRole::Data) data.push_back(a.operands[i].dtype);
  return ruleDType(a.op.dtypeRule, data);
}

InferResult inferUnary(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferGelu(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferBroadcast(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferMatmul(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferLinear(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferConv2d(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferPool2d(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferGlobalAvgPool(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferBatchNorm(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferLayerNorm(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferReduce(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferSoftmax(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferReshape(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferTranspose(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferConcat(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferSlice(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferGather(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferUnsqueeze(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferSqueeze(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferFlatten(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferExpand(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferCast(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }
InferResult inferConstant(const InferArgs &a) { return TensorType{resultDType(a), a.operands.empty() ? Shape{} : a.operands[0].shape}; }

}  // namespace ferry
