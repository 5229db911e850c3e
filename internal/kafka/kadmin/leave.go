package kadmin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/offloader/offloader/internal/kafka/client"
)

// RemoveStaticMember takes this instance's static membership out of the
// pipeline's group, as KIP-345's RemoveMembersFromConsumerGroup does: a
// LeaveGroup naming its group.instance.id. A static member that closes does
// not leave (so that a restart gets its partitions back at once); removed,
// its partitions go to the other members now instead of after
// session.timeout.ms. librdkafka has no call for it, so it is sent with a
// Kafka protocol client (franz-go) configured from kafka.consumer's
// connection settings. A member already gone is not an error.
func RemoveStaticMember(ctx context.Context, p client.Pipeline) error {
	opts, err := protocolClientOptions(p.Client)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	id := p.GroupInstanceID()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = p.Group
	m := kmsg.NewLeaveGroupRequestMember()
	m.InstanceID = &id
	reason := "offloader: removed on purpose (scale-in)"
	m.Reason = &reason
	req.Members = append(req.Members, m)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("removing static member %s from group %s: %w", id, p.Group, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("removing static member %s from group %s: %w", id, p.Group, err)
	}
	for _, member := range resp.Members {
		if err := kerr.ErrorForCode(member.ErrorCode); err != nil && err != kerr.UnknownMemberID {
			return fmt.Errorf("removing static member %s from group %s: %w", id, p.Group, err)
		}
	}
	return nil
}

// protocolClientOptions turns the librdkafka connection properties of
// kafka.consumer (security.protocol, sasl.mechanism, sasl.username,
// sasl.password, ssl.ca.location, ssl.certificate.location,
// ssl.key.location) into franz-go options. Another SASL mechanism
// (OAUTHBEARER, GSSAPI) is an error that says so.
func protocolClientOptions(c client.Client) ([]kgo.Opt, error) {
	props := c.Consumer
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(c.Bootstrap, ",")...)}
	protocol := strings.ToLower(props["security.protocol"])
	if protocol == "ssl" || protocol == "sasl_ssl" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if ca := props["ssl.ca.location"]; ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return nil, fmt.Errorf("ssl.ca.location: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("ssl.ca.location %s holds no PEM certificate", ca)
			}
		}
		if certFile, keyFile := props["ssl.certificate.location"], props["ssl.key.location"]; certFile != "" && keyFile != "" {
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return nil, fmt.Errorf("ssl.certificate.location and ssl.key.location: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if protocol == "sasl_plaintext" || protocol == "sasl_ssl" {
		user, pass := props["sasl.username"], props["sasl.password"]
		switch mech := strings.ToUpper(props["sasl.mechanism"]); mech {
		case "", "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("removing a static member is not supported with sasl.mechanism %s (PLAIN and SCRAM are): the member leaves after session.timeout.ms", mech)
		}
	}
	return opts, nil
}
