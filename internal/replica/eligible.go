package replica

import "weir/internal/metadata"

// EligibleIn is Env.Eligible over the metadata image that image returns
// at each call: a broker may join an ISR when the image has it
// registered, neither fenced nor shutting down (KIP-841), and, when its
// fetch carried a broker epoch (brokerEpoch >= 0), registered at that
// epoch (KIP-903: a broker that lost its disk and registered again must
// not count with a fetch from before).
func EligibleIn(image func() *metadata.Image) func(brokerID int32, brokerEpoch int64) bool {
	return func(id int32, epoch int64) bool {
		br, ok := image().Broker(id)
		if !ok || !br.Active() {
			return false
		}
		return epoch < 0 || br.Epoch == epoch
	}
}
