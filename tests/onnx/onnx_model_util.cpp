// tests/onnx/onnx_model_util.cpp — see onnx_model_util.h.
#include "onnx/onnx_model_util.h"

namespace ferry::onnx_test {

int32_t onnxType(DType t) {
  switch (t) {
    case DType::Bool: return onnx::TensorProto::BOOL;
    case DType::U8: return onnx::TensorProto::UINT8;
    case DType::I8: return onnx::TensorProto::INT8;
    case DType::I32: return onnx::TensorProto::INT32;
    case DType::I64: return onnx::TensorProto::INT64;
    case DType::F16: return onnx::TensorProto::FLOAT16;
    case DType::BF16: return onnx::TensorProto::BFLOAT16;
    case DType::F32: return onnx::TensorProto::FLOAT;
    case DType::F64: return onnx::TensorProto::DOUBLE;
  }
  return 0;
}

onnx::TensorProto tensorProto(const TensorData &data, const std::string &name) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnxType(data.dtype()));
  for (int64_t d : data.shape()) t.add_dims(d);
  t.set_raw_data(reinterpret_cast<const char *>(data.bytes().data()), data.byteSize());
  return t;
}

Model::Model(int opset, std::string graphName) {
  model_.set_ir_version(8);
  auto *o = model_.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  model_.mutable_graph()->set_name(std::move(graphName));
}

static void setType(onnx::ValueInfoProto &v, DType t, const std::vector<Dim> &dims) {
  auto *tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnxType(t));
  auto *shape = tt->mutable_shape();
  for (const Dim &d : dims) {
    auto *dim = shape->add_dim();
    if (!d.param.empty())
      dim->set_dim_param(d.param);
    else
      dim->set_dim_value(d.value);
  }
}

void Model::input(const std::string &name, DType t, std::vector<Dim> dims) {
  auto *v = graph().add_input();
  v->set_name(name);
  setType(*v, t, dims);
}

void Model::output(const std::string &name, DType t, std::vector<Dim> dims) {
  auto *v = graph().add_output();
  v->set_name(name);
  setType(*v, t, dims);
}

void Model::output(const std::string &name) { graph().add_output()->set_name(name); }

void Model::initializer(const std::string &name, const TensorData &data) {
  *graph().add_initializer() = tensorProto(data, name);
}

onnx::NodeProto &Model::node(const std::string &opType, std::vector<std::string> inputs,
                             std::vector<std::string> outputs, const std::string &name) {
  auto *n = graph().add_node();
  n->set_op_type(opType);
  n->set_name(name);
  for (auto &i : inputs) n->add_input(i);
  for (auto &o : outputs) n->add_output(o);
  return *n;
}

std::string Model::bytes() const { return model_.SerializeAsString(); }

Expected<Graph> Model::import(const OnnxImportOptions &options, const std::string &baseDir) const {
  std::string b = bytes();
  return importOnnx(std::as_bytes(std::span(b)), "model.onnx", baseDir, options);
}

std::string Model::importErrors(const OnnxImportOptions &options,
                                const std::string &baseDir) const {
  Expected<Graph> g = import(options, baseDir);
  if (g.ok()) return "";
  std::string s;
  for (const Diagnostic &d : g.status().diagnostics()) {
    s += d.loc.str() + ": " + d.message + "\n";
    for (const Note &n : d.notes) s += "  note: " + n.message + "\n";
  }
  return s;
}

static onnx::AttributeProto &add(onnx::NodeProto &n, const std::string &name,
                                 onnx::AttributeProto::AttributeType type) {
  auto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return *a;
}

void attr(onnx::NodeProto &n, const std::string &name, int64_t v) {
  add(n, name, onnx::AttributeProto::INT).set_i(v);
}
void attr(onnx::NodeProto &n, const std::string &name, double v) {
  add(n, name, onnx::AttributeProto::FLOAT).set_f(static_cast<float>(v));
}
void attr(onnx::NodeProto &n, const std::string &name, const std::string &v) {
  add(n, name, onnx::AttributeProto::STRING).set_s(v);
}
void attr(onnx::NodeProto &n, const std::string &name, std::vector<int64_t> v) {
  auto &a = add(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
}
void attr(onnx::NodeProto &n, const std::string &name, std::vector<double> v) {
  auto &a = add(n, name, onnx::AttributeProto::FLOATS);
  for (double x : v) a.add_floats(static_cast<float>(x));
}
void attr(onnx::NodeProto &n, const std::string &name, const TensorData &v) {
  *add(n, name, onnx::AttributeProto::TENSOR).mutable_t() = tensorProto(v);
}

TensorData tensor(DType t, Shape shape, std::vector<double> values) {
  return TensorData::fromDoubles(t, std::move(shape), values);
}

}  // namespace ferry::onnx_test
