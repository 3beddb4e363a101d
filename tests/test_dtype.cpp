#include <gtest/gtest.h>

#include "qcoll/dtype.hpp"

using qcoll::DType;

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::Float, DType::Float16, DType::Int8, DType::BFloat16, DType::HiFloat8,
                  DType::Float8E5M2, DType::Float8E4M3FN, DType::Float8E8M0}) {
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
