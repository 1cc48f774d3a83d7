package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

const saramaTopic = "sarama-orders"

// saramaGroup reads want records of sarama-orders, marks each, commits after every
// batch it was handed, and cancels the session once it has them all.
type saramaGroup struct {
	want   int
	mu     sync.Mutex
	read   int
	cancel context.CancelFunc
}

func (*saramaGroup) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (*saramaGroup) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaGroup) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			s.MarkMessage(m, "")
			if len(claim.Messages()) == 0 {
				s.Commit()
			}
			h.mu.Lock()
			h.read++
			if h.read >= h.want {
				s.Commit()
				h.cancel()
			}
			h.mu.Unlock()
		case <-s.Context().Done():
			return nil
		}
	}
}

// runSarama produces 10 records to sarama-orders with codec and reads the records
// produced so far (want) in the classic group sarama-<name>, at protocol version v.
func runSarama(bootstrap, name string, v sarama.KafkaVersion, codec sarama.CompressionCodec, want int) {
	cfg := sarama.NewConfig()
	cfg.Version = v
	cfg.ClientID = "sarama-" + name + "-producer"
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Compression = codec
	p, err := sarama.NewSyncProducer([]string{bootstrap}, cfg)
	if err != nil {
		die("%s: %v", cfg.ClientID, err)
	}
	var msgs []*sarama.ProducerMessage
	for i := 0; i < perCodec; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: saramaTopic,
			Key:   sarama.StringEncoder(fmt.Sprintf("k%d", i%5)),
			Value: sarama.StringEncoder(fmt.Sprintf("%s-%s-order-%d", name, codec, i))})
	}
	if err := p.SendMessages(msgs); err != nil {
		die("%s: %v", cfg.ClientID, err)
	}
	if err := p.Close(); err != nil {
		die("%s: close: %v", cfg.ClientID, err)
	}
	fmt.Printf("%s: produced %d records (%s, version %s) to %s\n", cfg.ClientID, perCodec, codec, v, saramaTopic)

	ccfg := sarama.NewConfig()
	ccfg.Version = v
	ccfg.ClientID = "sarama-" + name + "-consumer"
	ccfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	ccfg.Consumer.Offsets.AutoCommit.Enable = false
	ccfg.Consumer.Return.Errors = true
	group := "sarama-" + name
	g, err := sarama.NewConsumerGroup([]string{bootstrap}, group, ccfg)
	if err != nil {
		die("%s: %v", ccfg.ClientID, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		for err := range g.Errors() {
			die("%s: %v", ccfg.ClientID, err)
		}
	}()
	h := &saramaGroup{want: want, cancel: cancel}
	for ctx.Err() == nil {
		if err := g.Consume(ctx, []string{saramaTopic}, h); err != nil {
			die("%s: %v", ccfg.ClientID, err)
		}
	}
	if err := g.Close(); err != nil {
		die("%s: close: %v", ccfg.ClientID, err)
	}
	if h.read != want {
		die("%s: read %d records, expected %d", ccfg.ClientID, h.read, want)
	}
	fmt.Printf("%s: consumed %d records in group %s, committed, left\n", ccfg.ClientID, h.read, group)
}
