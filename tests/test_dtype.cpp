#include <gtest/gtest.h>

#include <cstdint>

#include "qcoll/dtype.hpp"

using qcoll::DType;

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::Float, DType::Float16, DType::Int8, DType::BFloat16, DType::HiFloat8, DType::Float8E5M2,
                  DType::Float8E4M3FN, DType::Float8E8M0, DType::Float4E2M1, DType::Float4E1M2}) {
    auto parsed = qcoll::parse_dtype(qcoll::dtype_name(t));
    ASSERT_TRUE(parsed.has_value()) << qcoll::dtype_name(t);
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_EQ(qcoll::dtype_name(DType::Float8E4M3FN), "float8_e4m3fn");
  EXPECT_EQ(qcoll::dtype_name(DType::Float), "float");
}

TEST(DType, Aliases) {
  EXPECT_EQ(qcoll::parse_dtype("fp32"), DType::Float);
  EXPECT_EQ(qcoll::parse_dtype("FP16"), DType::Float16);
  EXPECT_EQ(qcoll::parse_dtype("bf16"), DType::BFloat16);
  EXPECT_FALSE(qcoll::parse_dtype("int9").has_value());
  EXPECT_FALSE(qcoll::parse_dtype("").has_value());
}

TEST(DType, Sizes) {
  EXPECT_EQ(qcoll::dtype_size(DType::Float), 4u);
  EXPECT_EQ(qcoll::dtype_size(DType::BFloat16), 2u);
  EXPECT_EQ(qcoll::dtype_size(DType::HiFloat8), 1u);
  EXPECT_EQ(qcoll::dtype_size(static_cast<DType>(99)), 0u);
  EXPECT_TRUE(qcoll::is_8bit_format(DType::Float8E8M0));
  EXPECT_FALSE(qcoll::is_8bit_format(DType::Float16));
}

TEST(DType, FourBitFormats) {
  EXPECT_EQ(static_cast<int>(DType::Float4E2M1), 40);  // ACL_FLOAT4_E2M1
  EXPECT_EQ(static_cast<int>(DType::Float4E1M2), 41);  // ACL_FLOAT4_E1M2
  EXPECT_EQ(qcoll::dtype_name(DType::Float4E2M1), "float4_e2m1");
  EXPECT_EQ(qcoll::dtype_name(DType::Float4E1M2), "float4_e1m2");
  for (const char* s : {"float4_e2m1", "float4_e2m1fn", "e2m1", "FLOAT4_E2M1FN", "E2M1"})
    EXPECT_EQ(qcoll::parse_dtype(s), DType::Float4E2M1) << s;
  for (const char* s : {"float4_e1m2", "e1m2", "E1M2"}) EXPECT_EQ(qcoll::parse_dtype(s), DType::Float4E1M2) << s;
  for (const char* s : {"float4", "fp4", "e1m2fn", "float4_e2m1fn_x2"}) EXPECT_FALSE(qcoll::parse_dtype(s)) << s;
  EXPECT_TRUE(qcoll::is_known_dtype(40));
  EXPECT_TRUE(qcoll::is_known_dtype(41));
  EXPECT_FALSE(qcoll::is_known_dtype(38) || qcoll::is_known_dtype(39) || qcoll::is_known_dtype(42));
  for (DType t : {DType::Float4E2M1, DType::Float4E1M2}) {
    EXPECT_TRUE(qcoll::is_4bit_format(t));
    EXPECT_FALSE(qcoll::is_8bit_format(t));
    EXPECT_EQ(qcoll::dtype_size(t), 0u);  // not a whole number of bytes
    EXPECT_EQ(qcoll::dtype_bits(t), 4u);
    EXPECT_EQ(qcoll::dtype_bytes(t, 0), 0u);
    EXPECT_EQ(qcoll::dtype_bytes(t, 1), 1u);
    EXPECT_EQ(qcoll::dtype_bytes(t, 1024), 512u);
    EXPECT_EQ(qcoll::dtype_bytes(t, 1025), 513u);
    EXPECT_EQ(qcoll::dtype_bytes(t, SIZE_MAX), SIZE_MAX / 2 + 1);
  }
  EXPECT_FALSE(qcoll::is_4bit_format(DType::Int8));
  EXPECT_EQ(qcoll::dtype_bits(DType::Float), 32u);
  EXPECT_EQ(qcoll::dtype_bits(DType::BFloat16), 16u);
  EXPECT_EQ(qcoll::dtype_bits(DType::Float8E8M0), 8u);
  EXPECT_EQ(qcoll::dtype_bits(static_cast<DType>(99)), 0u);
  EXPECT_EQ(qcoll::dtype_bytes(DType::Float, 3), 12u);
  EXPECT_EQ(qcoll::dtype_bytes(DType::Int8, 3), 3u);
  EXPECT_EQ(qcoll::dtype_bytes(static_cast<DType>(99), 3), 0u);
}
