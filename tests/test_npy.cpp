// The .npy reader and writer (tools/npy.hpp): files as NumPy writes them, round trips, and
// every rejection with a crafted byte buffer. Expected bytes are built here by hand.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "npy.hpp"

namespace npy = qcoll::npy;
using Bytes = std::vector<uint8_t>;

namespace {

// A .npy file: magic, version, little-endian header length (2 bytes for 1.0, 4 otherwise),
// the header text exactly as given, then the data.
Bytes craft(const std::string& header, const Bytes& data, int major = 1, int minor = 0) {
  Bytes b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), static_cast<uint8_t>(minor)};
  const std::size_t n = header.size();
  b.push_back(n & 0xFF);
  b.push_back((n >> 8) & 0xFF);
  if (major != 1) {
    b.push_back((n >> 16) & 0xFF);
    b.push_back((n >> 24) & 0xFF);
  }
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n";
}

npy::Array parse(const Bytes& b) { return npy::parse(b.data(), b.size(), "in.npy"); }

// Parsing must fail with an NpyError whose message names the file and contains `needle`.
void expect_reject(const Bytes& b, const std::string& needle) {
  try {
    npy::parse(b.data(), b.size(), "bad_file.npy");
    ADD_FAILURE() << "accepted; expected an error containing '" << needle << "'";
  } catch (const npy::NpyError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("bad_file.npy: ", 0), 0u) << m;
    EXPECT_NE(m.find(needle), std::string::npos) << "message: " << m << "\nexpected to contain: " << needle;
  }
}

Bytes f32_bytes(std::initializer_list<float> v) {
  Bytes b;
  for (float f : v) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    for (int i = 0; i < 4; ++i) b.push_back((u >> (8 * i)) & 0xFF);
  }
  return b;
}

}  // namespace

// The bytes numpy 2.x writes for np.save(np.array([[1,2,3],[4,5,6]], dtype='<f4')).
TEST(NpyRead, FileWrittenByNumpy) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  header += std::string(117 - header.size(), ' ') + "\n";
  ASSERT_EQ(header.size(), 118u);
  Bytes file = craft(header, f32_bytes({1, 2, 3, 4, 5, 6}));
  ASSERT_EQ(file.size(), 152u);
  npy::Array a = parse(file);
  EXPECT_EQ(a.type, npy::ElemType::Float32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.count(), 6u);
  EXPECT_EQ(a.data, f32_bytes({1, 2, 3, 4, 5, 6}));
}

TEST(NpyRead, EveryDtype) {
  struct Case {
    const char* descr;
    npy::ElemType type;
    std::size_t size;
  };
  const Case cases[] = {{"<f4", npy::ElemType::Float32, 4}, {"<f2", npy::ElemType::Float16, 2},
                        {"<u2", npy::ElemType::UInt16, 2},  {"|i1", npy::ElemType::Int8, 1},
                        {"|u1", npy::ElemType::UInt8, 1},   {"<i1", npy::ElemType::Int8, 1},
                        {"<u1", npy::ElemType::UInt8, 1}};
  for (const Case& c : cases) {
    Bytes data(3 * c.size);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(0xA0 + i);
    npy::Array a = parse(craft(dict(c.descr, "(3,)"), data));
    EXPECT_EQ(a.type, c.type) << c.descr;
    EXPECT_EQ(a.shape, (std::vector<int64_t>{3})) << c.descr;
    EXPECT_EQ(a.data, data) << c.descr;
  }
}

TEST(NpyRead, Versions2And3) {
  for (int major : {2, 3}) {
    npy::Array a = parse(craft(dict("|u1", "(2, 2)"), {1, 2, 3, 4}, major));
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(a.data, (Bytes{1, 2, 3, 4}));
  }
}

TEST(NpyRead, ScalarEmptyAnd3D) {
  npy::Array s = parse(craft(dict("<u2", "()"), {5, 0}));
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.count(), 1u);
  npy::Array e = parse(craft(dict("<f4", "(0, 4)"), {}));
  EXPECT_EQ(e.count(), 0u);
  npy::Array t = parse(craft(dict("|i1", "(2, 1, 3)"), {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 1, 3}));
}

TEST(NpyRead, HeaderVariants) {
  // Double quotes, no trailing comma, other key order, no spaces, Python 2 'L' suffixes.
  EXPECT_EQ(parse(craft("{\"shape\":(2,),\"descr\":\"|u1\",\"fortran_order\":False}\n", {7, 8})).data, (Bytes{7, 8}));
  EXPECT_EQ(parse(craft("{'descr': '|u1', 'fortran_order': False, 'shape': (1L, 2L), }   \n", {7, 8})).shape,
            (std::vector<int64_t>{1, 2}));
}

TEST(NpyWrite, LayoutAsNumpyWritesIt) {
  npy::Array a;
  a.type = npy::ElemType::Float32;
  a.shape = {2, 3};
  a.data = f32_bytes({1, 2, 3, 4, 5, 6});
  Bytes out = npy::serialize(a);
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  header += std::string(117 - header.size(), ' ') + "\n";
  EXPECT_EQ(out, craft(header, a.data));
}

TEST(NpyWrite, RoundTripEveryTypeAndShape) {
  const npy::ElemType types[] = {npy::ElemType::Float32, npy::ElemType::Float16, npy::ElemType::UInt16,
                                 npy::ElemType::Int8, npy::ElemType::UInt8};
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3}, {2, 3, 4}, {1, 1, 1, 1, 7}, {0}};
  std::mt19937 rng(1);
  for (auto t : types) {
    for (const auto& shape : shapes) {
      npy::Array a;
      a.type = t;
      a.shape = shape;
      a.data.resize(a.count() * npy::elem_size(t));
      for (auto& b : a.data) b = static_cast<uint8_t>(rng());
      Bytes file = npy::serialize(a);
      EXPECT_EQ(file[6], 1);  // version 1.0
      std::size_t header_len = file[8] | (file[9] << 8);
      EXPECT_EQ((10 + header_len) % 64, 0u);  // data aligned to 64 bytes
      EXPECT_EQ(file[10 + header_len - 1], '\n');
      npy::Array b = parse(file);
      EXPECT_EQ(b.type, t);
      EXPECT_EQ(b.shape, shape);
      EXPECT_EQ(b.data, a.data);
    }
  }
}

TEST(NpyWrite, LongHeaderUsesVersion2) {
  npy::Array a;
  a.type = npy::ElemType::UInt8;
  a.shape.assign(30000, 1);  // a header longer than 65535 bytes
  a.data = {42};
  Bytes out = npy::serialize(a);
  ASSERT_GT(out.size(), 12u);
  EXPECT_EQ(out[6], 2);
  EXPECT_EQ(out[7], 0);
  std::size_t header_len = out[8] | (out[9] << 8) | (out[10] << 16) | (static_cast<std::size_t>(out[11]) << 24);
  EXPECT_GT(header_len, 65535u);
  EXPECT_EQ((12 + header_len) % 64, 0u);
  EXPECT_EQ(out.size(), 12 + header_len + 1);
  EXPECT_EQ(out[12 + header_len - 1], '\n');
  EXPECT_EQ(out.back(), 42);
  // The reader refuses so many dimensions, with a message rather than a crash.
  expect_reject(out, "more than 32 dimensions");
}

TEST(NpyWrite, DataSizeMismatchThrows) {
  npy::Array a;
  a.type = npy::ElemType::Float32;
  a.shape = {2};
  a.data = {1, 2, 3};
  EXPECT_THROW(npy::serialize(a), npy::NpyError);
}

TEST(NpyFile, WriteThenRead) {
  std::string path = ::testing::TempDir() + "/qcoll_test_npy_roundtrip.npy";
  npy::Array a;
  a.type = npy::ElemType::Int8;
  a.shape = {2, 2};
  a.data = {0x80, 0x7F, 0x00, 0xFF};
  npy::write_bytes(path, npy::serialize(a));
  npy::Array b = npy::read_file(path);
  EXPECT_EQ(b.data, a.data);
  EXPECT_EQ(b.shape, a.shape);
  std::remove(path.c_str());
}

TEST(NpyFile, MissingFileNamesThePath) {
  std::string path = ::testing::TempDir() + "/qcoll_no_such_file.npy";
  try {
    npy::read_file(path);
    FAIL() << "no error";
  } catch (const npy::NpyError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
  }
}

TEST(NpyReject, PrefixErrors) {
  expect_reject({}, "too short");
  expect_reject({0x93, 'N', 'U', 'M'}, "too short");
  Bytes good = craft(dict("|u1", "(1,)"), {1});
  Bytes b = good;
  b[1] = 'X';
  expect_reject(b, "not a .npy file");
  b = good;
  b[6] = 4;
  expect_reject(b, "version 4.0");
  b = good;
  b[6] = 0;
  expect_reject(b, "version 0.0");
  b = good;
  b[7] = 1;
  expect_reject(b, "version 1.1");
}

TEST(NpyReject, HeaderLengthErrors) {
  Bytes b = craft(dict("|u1", "(1,)"), {1});
  b[8] = 0;
  b[9] = 0;
  expect_reject(b, "header length is 0");
  b = craft(dict("|u1", "(1,)"), {1});
  b[9] = 0xFF;  // claims more than the file holds
  expect_reject(b, "truncated .npy header");
  Bytes v2 = craft(dict("|u1", "(1,)"), {1}, 2);
  v2[8] = v2[9] = v2[10] = v2[11] = 0xFF;
  expect_reject(v2, "exceeds the limit");
  // Version 2 prefix cut short.
  expect_reject(Bytes(v2.begin(), v2.begin() + 11), "truncated .npy header");
  // The header must end with a newline.
  expect_reject(craft("{'descr': '|u1', 'fortran_order': False, 'shape': (1,), } ", {1}), "newline");
}

TEST(NpyReject, DictSyntax) {
  expect_reject(craft("['descr']\n", {}), "must be a Python dict");
  expect_reject(craft("{'descr': '|u1', 'fortran_order': False}\n", {}), "no 'shape'");
  expect_reject(craft("{'descr': '|u1', 'shape': (1,)}\n", {1}), "no 'fortran_order'");
  expect_reject(craft("{'fortran_order': False, 'shape': (1,)}\n", {1}), "no 'descr'");
  expect_reject(craft("{'descr': '|u1', 'descr': '|u1', 'fortran_order': False, 'shape': (1,)}\n", {1}),
                "duplicate key 'descr'");
  expect_reject(craft("{'descr': '|u1', 'fortran_order': False, 'shape': (1,), 'extra': 1}\n", {1}),
                "unexpected key 'extra'");
  expect_reject(craft("{'descr': '|u1' 'fortran_order': False, 'shape': (1,)}\n", {1}), "expected ',' or '}'");
  expect_reject(craft("{'descr': '|u1', 'fortran_order': False, 'shape': (1,)} x\n", {1}), "after the header dict");
  expect_reject(craft("{'descr: '|u1', 'fortran_order': False, 'shape': (1,)}\n", {1}), "expected ':'");
  expect_reject(craft("{'descr': '|u1\n", {}), "unterminated string");
  expect_reject(craft("{'descr': '|\\u1', 'fortran_order': False, 'shape': (1,)}\n", {1}), "escape");
  expect_reject(craft("{descr: '|u1'}\n", {}), "quoted string");
  expect_reject(craft("{'descr': '|u1', 'fortran_order': False, 'shape': (1,)\n", {1}), "expected ',' or '}'");
}

TEST(NpyReject, Dtypes) {
  expect_reject(craft(dict("|b1", "(1,)"), {1}), "unsupported dtype '|b1'");
  expect_reject(craft(dict("<f8", "(1,)"), Bytes(8)), "unsupported dtype '<f8'");
  expect_reject(craft(dict("<i4", "(1,)"), Bytes(4)), "unsupported dtype '<i4'");
  expect_reject(craft(dict(">f4", "(1,)"), Bytes(4)), "big-endian");
  expect_reject(craft(dict("=f2", "(1,)"), Bytes(2)), "little-endian");
  expect_reject(craft(dict("|f4", "(1,)"), Bytes(4)), "little-endian");
  expect_reject(craft(dict("xu1", "(1,)"), {1}), "unsupported dtype");
  expect_reject(craft(dict("", "(1,)"), {1}), "unsupported dtype ''");
  expect_reject(craft("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}\n", Bytes(4)), "structured");
}

TEST(NpyReject, FortranOrder) {
  expect_reject(craft(dict("<f4", "(2, 2)", "True"), Bytes(16)), "fortran_order True");
  expect_reject(craft(dict("<f4", "(2, 2)", "1"), Bytes(16)), "True or False");
}

TEST(NpyReject, Shapes) {
  expect_reject(craft(dict("|u1", "(3)"), {1, 2, 3}), "must be a tuple");
  expect_reject(craft(dict("|u1", "[3]"), {1, 2, 3}), "must be a tuple");
  expect_reject(craft(dict("|u1", "(-3,)"), {1, 2, 3}), "non-negative integers");
  expect_reject(craft(dict("|u1", "(3.0,)"), {1, 2, 3}), "expected ',' or ')'");
  expect_reject(craft(dict("|u1", "(1, , 2)"), {1, 2}), "non-negative integers");
  expect_reject(craft(dict("|u1", "(99999999999999999999,)"), {1}), "too large");
  // Each dimension fits in int64 but the byte count overflows 64 bits.
  expect_reject(craft(dict("<f4", "(4294967296, 4294967296)"), {1}), "overflows 64 bits");
  expect_reject(craft(dict("<f4", "(9223372036854775807,)"), {1}), "overflows 64 bits");
  // Larger than the file.
  expect_reject(craft(dict("<f4", "(1000000, 1000000)"), Bytes(16)), "truncated data");
  std::string many = "(";
  for (int i = 0; i < 33; ++i) many += "1, ";
  expect_reject(craft(dict("|u1", many + ")"), {1}), "more than 32 dimensions");
}

TEST(NpyReject, TruncatedAndTrailingData) {
  expect_reject(craft(dict("<f4", "(2, 3)"), Bytes(23)), "needs 24 bytes, the file has 23");
  expect_reject(craft(dict("<f4", "(2, 3)"), {}), "needs 24 bytes, the file has 0");
  expect_reject(craft(dict("<u2", "(2,)"), Bytes(5)), "1 unexpected bytes after the data");
}

// Every prefix of a valid file, and random corruptions of it, give an NpyError or (only
// for the whole file) success; never a crash (run under the sanitizers in CI).
TEST(NpyReject, NoCrashOnPrefixesAndCorruptions) {
  Bytes good = craft(dict("<f2", "(3, 2)"), Bytes(12, 0x3C));
  for (std::size_t n = 0; n < good.size(); ++n) {
    Bytes cut(good.begin(), good.begin() + n);
    EXPECT_THROW(npy::parse(cut.data(), cut.size(), "cut.npy"), npy::NpyError) << n;
  }
  EXPECT_NO_THROW(parse(good));
  std::mt19937 rng(7);
  int accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    Bytes b = good;
    int flips = 1 + rng() % 4;
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] = static_cast<uint8_t>(rng());
    try {
      npy::Array a = npy::parse(b.data(), b.size(), "fuzz.npy");
      EXPECT_EQ(a.data.size(), a.count() * npy::elem_size(a.type));
      ++accepted;
    } catch (const npy::NpyError&) {
    }
  }
  EXPECT_GT(accepted, 0);  // changes in padding spaces or data keep the file valid
}
