package main

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// mks3bucket VAR creates an empty bucket on the test S3 server (CKPT_TEST_S3_*) and sets
	// $VAR to its name: destinations of `ckpt cp` must be empty.
	scriptCmds["mks3bucket"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: mks3bucket VAR")
		}
		client := s3.New(s3.Options{
			BaseEndpoint: aws.String(ts.Getenv("CKPT_TEST_S3_ENDPOINT")),
			UsePathStyle: true,
			Region:       "us-east-1",
			Credentials:  credentials.NewStaticCredentialsProvider(ts.Getenv("CKPT_TEST_S3_ACCESS_KEY"), ts.Getenv("CKPT_TEST_S3_SECRET_KEY"), ""),
		})
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		bucket := fmt.Sprintf("ckpt-cp-%x", rnd)
		_, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		ts.Check(err)
		ts.Setenv(args[0], bucket)
	}
}
