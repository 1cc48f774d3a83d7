// One session of Go clients against a testbed broker, for testbed/scenario go-clients.
// franz-go: kadm creates topics, four producers write 10 records each to go-orders
// (gzip, snappy, lz4, zstd), a classic consumer group (go-classic) and a KIP-848
// consumer group (go-848, group.protocol=consumer: ConsumerGroupHeartbeat) each read
// the 40 records, committing after every poll, and leave. Sarama (sarama.go), once at
// its default protocol version (2.8.0) and once at sarama.MaxVersion: a producer
// writes 10 records to sarama-orders (gzip, then zstd), a classic group reads them and
// commits. Then kadm describes the broker's and a topic's configs, lists and
// describes the groups, fetches the franz-go groups' offsets, lists start and end
// offsets, deletes go-classic, go-848 and the topic go-scratch.
//
//	go run . HOST:PORT
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	topic    = "go-orders"
	scratch  = "go-scratch"
	perCodec = 10
)

// franz-go sends a batch uncompressed when compressing does not make it smaller, so
// every record carries this repetitive text: each codec then shrinks its batches.
var filler = strings.Repeat("kwire go-clients ", 12)

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "go-clients: "+format+"\n", args...)
	os.Exit(1)
}

func client(bootstrap, id string, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.ClientID(id)}, opts...)...)
	if err != nil {
		die("%s: %v", id, err)
	}
	return cl
}

// consume reads the 40 records of go-orders in group, commits after every poll that
// returned records, and leaves the group.
func consume(ctx context.Context, bootstrap, id, group string, opts ...kgo.Opt) {
	cl := client(bootstrap, id, append([]kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	}, opts...)...)
	want := 4 * perCodec
	read := 0
	cctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	for read < want {
		fs := cl.PollFetches(cctx)
		if err := cctx.Err(); err != nil {
			die("%s: read %d of %d records: %v", id, read, want, err)
		}
		fs.EachError(func(t string, p int32, err error) { die("%s: fetch %s/%d: %v", id, t, p, err) })
		if n := fs.NumRecords(); n > 0 {
			read += n
			if err := cl.CommitUncommittedOffsets(cctx); err != nil {
				die("%s: commit: %v", id, err)
			}
		}
	}
	if read != want {
		die("%s: read %d records, expected %d", id, read, want)
	}
	if err := cl.LeaveGroupContext(cctx); err != nil {
		die("%s: leave: %v", id, err)
	}
	cl.Close()
	fmt.Printf("%s: consumed %d records in group %s, committed, left\n", id, read, group)
}

func main() {
	if len(os.Args) != 2 {
		die("usage: go-clients HOST:PORT")
	}
	bootstrap := os.Args[1]
	ctx := context.Background()

	acl := client(bootstrap, "kgo-admin")
	defer acl.Close()
	adm := kadm.NewClient(acl)
	// Records carry the time of the run: no time-based retention may delete them when
	// a capture of this session is replayed later.
	keep := map[string]*string{"retention.ms": kadm.StringPtr("-1")}
	// KWIRE_GO_RF: the topics' replication factor (default 1, a single broker's).
	rf := int16(1)
	if v := os.Getenv("KWIRE_GO_RF"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			die("KWIRE_GO_RF=%q is not a replication factor", v)
		}
		rf = int16(n)
	}
	for name, parts := range map[string]int32{topic: 3, scratch: 1, saramaTopic: 2} {
		r, err := adm.CreateTopic(ctx, parts, rf, keep, name)
		if err != nil || r.Err != nil {
			die("create topic %s: %v %v", name, err, r.Err)
		}
	}

	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{{"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()}}
	for _, c := range codecs {
		id := "kgo-producer-" + c.name
		p := client(bootstrap, id, kgo.ProducerBatchCompression(c.codec), kgo.ProducerLinger(50*time.Millisecond))
		var recs []*kgo.Record
		for i := 0; i < perCodec; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i%5)),
				Value: []byte(fmt.Sprintf("%s-order-%d %s", c.name, i, filler))})
		}
		if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			die("%s: %v", id, err)
		}
		p.Close()
		fmt.Printf("%s: produced %d records to %s\n", id, perCodec, topic)
	}

	consume(ctx, bootstrap, "kgo-classic", "go-classic")
	consume(ctx, bootstrap, "kgo-848", "go-848", kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()))

	runSarama(bootstrap, "default", sarama.DefaultVersion, sarama.CompressionGZIP, perCodec)
	runSarama(bootstrap, "max", sarama.MaxVersion, sarama.CompressionZSTD, 2*perCodec)

	if _, err := adm.DescribeBrokerConfigs(ctx, 1); err != nil {
		die("describe broker configs: %v", err)
	}
	if rc, err := adm.DescribeTopicConfigs(ctx, topic); err != nil {
		die("describe topic configs: %v", err)
	} else if c, err := rc.On(topic, nil); err != nil || c.Err != nil {
		die("describe topic configs %s: %v %v", topic, err, c.Err)
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		die("list groups: %v", err)
	}
	groups := listed.Groups()
	sort.Strings(groups)
	fmt.Printf("kgo-admin: groups %v\n", groups)
	if _, err := adm.DescribeGroups(ctx, "go-classic"); err != nil {
		die("describe groups: %v", err)
	}
	if _, err := adm.DescribeConsumerGroups(ctx, "go-848"); err != nil {
		die("describe consumer groups: %v", err)
	}
	for _, g := range []string{"go-classic", "go-848"} {
		offs, err := adm.FetchOffsets(ctx, g)
		if err != nil {
			die("fetch offsets %s: %v", g, err)
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
		if sum != 4*perCodec {
			die("group %s committed %d records in all, expected %d", g, sum, 4*perCodec)
		}
	}
	if _, err := adm.ListStartOffsets(ctx, topic); err != nil {
		die("list start offsets: %v", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		die("list end offsets: %v", err)
	}
	var end int64
	ends.Each(func(o kadm.ListedOffset) { end += o.Offset })
	if end != 4*perCodec {
		die("%s ends at %d records in all, expected %d", topic, end, 4*perCodec)
	}
	dg, err := adm.DeleteGroups(ctx, "go-classic", "go-848")
	if err != nil {
		die("delete groups: %v", err)
	}
	for g, r := range dg {
		if r.Err != nil {
			die("delete group %s: %v", g, r.Err)
		}
	}
	dt, err := adm.DeleteTopics(ctx, scratch)
	if err != nil || dt.Error() != nil {
		die("delete topic %s: %v %v", scratch, err, dt.Error())
	}
	fmt.Println("kgo-admin: described configs, groups and offsets; deleted go-classic, go-848 and go-scratch")
}
