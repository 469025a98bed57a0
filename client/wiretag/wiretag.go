package wiretag

import "github.com/twmb/franz-go/pkg/kmsg"

// ShareFetchAllLeaders is the tag of a record_limit ShareFetch whose
// consumer asks every leader at once when it waits, as weir's
// ShareConsumer does (the Java client asks one broker at a time). A weir
// broker then keeps the request's MaxWaitMs instead of answering an empty
// fetch early to send the consumer on to another broker
// (weir.share.fetch.elsewhere.wait.ms). Its value is one version byte, 1.
const ShareFetchAllLeaders uint32 = 0x7765

// SetShareFetchAllLeaders marks tags with ShareFetchAllLeaders.
func SetShareFetchAllLeaders(tags *kmsg.Tags) { tags.Set(ShareFetchAllLeaders, []byte{1}) }

// HasShareFetchAllLeaders reports whether tags carry ShareFetchAllLeaders
// with a value this version understands.
func HasShareFetchAllLeaders(tags *kmsg.Tags) bool {
	has := false
	tags.Each(func(k uint32, v []byte) {
		has = has || k == ShareFetchAllLeaders && len(v) == 1 && v[0] == 1
	})
	return has
}
