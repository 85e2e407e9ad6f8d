// The reference layer, written from the textbook formulas (softmax(QKᵀ/√d + causal mask)·V, full
// S×S matrices, double precision) and deliberately independent of kernels/ and of the layer template.
#include "reference.hpp"

#include <Eigen/Dense>
#include <cmath>
#include <limits>

#include "inputs.hpp"

namespace basp::validate {

namespace {
using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Mat weight_matrix(std::uint64_t seed, InputTensor t, const LayerShape& s) {
  const long rows = weight_rows(t, s), cols = weight_cols(t, s);
  const double scale = input_scale(t, s);
  Mat w(rows, cols);
  for (long r = 0; r < rows; ++r)
    for (long c = 0; c < cols; ++c) w(r, c) = input_value(seed, t, std::uint64_t(r * cols + c), scale);
  return w;
}

Mat sequence(std::uint64_t seed, InputTensor t, const LayerShape& s, int b) {
  Mat m(s.seq, s.hidden);
  for (long i = 0; i < s.seq; ++i)
    for (long c = 0; c < s.hidden; ++c)
      m(i, c) = input_value(seed, t, std::uint64_t((long(b) * s.seq + i) * s.hidden + c), 1.0);
  return m;
}

// Rotates every head of m [S][heads·dh] by position i's angles (sign −1: the transpose rotation).
void rotate(Mat& m, int heads, long dh, double theta, double sign) {
  const long half = dh / 2;
  for (long i = 0; i < m.rows(); ++i)
    for (int h = 0; h < heads; ++h)
      for (long d = 0; d < half; ++d) {
        const double angle = double(i) / std::pow(theta, double(2 * d) / double(dh));
        const double c = std::cos(angle), sn = sign * std::sin(angle);
        const double a = m(i, h * dh + d), b = m(i, h * dh + d + half);
        m(i, h * dh + d) = a * c - b * sn;
        m(i, h * dh + d + half) = b * c + a * sn;
      }
}

Mat causal_softmax(const Mat& q, const Mat& k, double scale) {
  Mat p = q * k.transpose() * scale;
  for (long i = 0; i < p.rows(); ++i) {
    for (long j = i + 1; j < p.cols(); ++j) p(i, j) = -std::numeric_limits<double>::infinity();
    const double mx = p.row(i).maxCoeff();
    p.row(i) = (p.row(i).array() - mx).exp().matrix();
    p.row(i) /= p.row(i).sum();
  }
  return p;
}

void append(std::vector<double>& out, const Mat& m) {
  out.insert(out.end(), m.data(), m.data() + m.size());
}
void store(std::vector<double>& out, const Mat& m) {
  out.assign(m.data(), m.data() + m.size());
}
}  // namespace

LayerResult reference_layer(std::uint64_t seed, const LayerShape& s) {
  const long dh = s.head_dim;
  const int group = s.heads / s.kv_heads;
  const double scale = 1.0 / std::sqrt(double(dh));
  const Mat wq = weight_matrix(seed, InputTensor::wq, s), wk = weight_matrix(seed, InputTensor::wk, s),
            wv = weight_matrix(seed, InputTensor::wv, s), wo = weight_matrix(seed, InputTensor::wo, s);
  Mat dwq = Mat::Zero(wq.rows(), wq.cols()), dwk = Mat::Zero(wk.rows(), wk.cols()),
      dwv = Mat::Zero(wv.rows(), wv.cols()), dwo = Mat::Zero(wo.rows(), wo.cols());
  LayerResult r;
  for (int b = 0; b < s.batch; ++b) {
    const Mat x = sequence(seed, InputTensor::x, s, b), dy = sequence(seed, InputTensor::dy, s, b);
    Mat q = x * wq, k = x * wk;
    const Mat v = x * wv;
    rotate(q, s.heads, dh, s.rope_theta, 1.0);
    rotate(k, s.kv_heads, dh, s.rope_theta, 1.0);
    Mat o(s.seq, s.q_width());
    const Mat d_o = dy * wo.transpose();
    Mat dq(s.seq, s.q_width()), dk = Mat::Zero(s.seq, s.kv_width()), dv = Mat::Zero(s.seq, s.kv_width());
    for (int h = 0; h < s.heads; ++h) {
      const int g = h / group;
      const Mat qh = q.middleCols(h * dh, dh), kg = k.middleCols(g * dh, dh), vg = v.middleCols(g * dh, dh);
      const Mat p = causal_softmax(qh, kg, scale);
      o.middleCols(h * dh, dh) = p * vg;
      const Mat doh = d_o.middleCols(h * dh, dh);
      const Mat dp = doh * vg.transpose();
      const Eigen::VectorXd rowdot = (p.array() * dp.array()).rowwise().sum();
      const Mat ds = (p.array() * (dp.colwise() - rowdot).array()).matrix();
      dv.middleCols(g * dh, dh) += p.transpose() * doh;
      dq.middleCols(h * dh, dh) = ds * kg * scale;
      dk.middleCols(g * dh, dh) += ds.transpose() * qh * scale;
    }
    append(r.y, o * wo);
    dwo += o.transpose() * dy;
    rotate(dq, s.heads, dh, s.rope_theta, -1.0);
    rotate(dk, s.kv_heads, dh, s.rope_theta, -1.0);
    append(r.dx, dq * wq.transpose() + dk * wk.transpose() + dv * wv.transpose());
    dwq += x.transpose() * dq;
    dwk += x.transpose() * dk;
    dwv += x.transpose() * dv;
  }
  store(r.dwq, dwq);
  store(r.dwk, dwk);
  store(r.dwv, dwv);
  store(r.dwo, dwo);
  return r;
}

}  // namespace basp::validate
