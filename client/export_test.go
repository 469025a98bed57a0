package client

// BrokerForExample returns the test broker's address for the package example.
func BrokerForExample() string {
	brokerOnce.Do(func() {
		if a := getenvBootstrap(); a != "" {
			brokerAddr = a
			return
		}
		brokerAddr, brokerStop, brokerErr = startWeir()
	})
	if brokerErr != nil {
		panic(brokerErr)
	}
	return brokerAddr
}
